/**
 * Media on local disk: `<mediaDir>/<connectionId>/<filename>`, one folder per connection (docs/architecture.md § Data
 * directory). Owns the file-name rules (a name never leaves its folder: no `..`, separators or NUL), atomic writes (a
 * temp file in the same folder, then rename, so readers never see half a file) and type sniffing (file-type).
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { fileTypeFromBuffer } from 'file-type';
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from '../config/private-dir.ts';

/** A stored media file. */
export interface MediaFile {
  path: string;
  size: number;
}

/** True for a name that may be used inside a connection's media folder. */
export function isSafeMediaName(name: string): boolean {
  return (
    name.length > 0 &&
    name.length <= 200 &&
    name !== '.' &&
    name !== '..' &&
    !name.includes('..') &&
    !/[/\\\0]/.test(name) &&
    !name.startsWith('.')
  );
}

export class MediaStore {
  constructor(readonly root: string) {}

  /** The folder of a connection's media. */
  dir(connectionId: string): string {
    return path.join(this.root, connectionId.replace(/[^A-Za-z0-9_-]/g, '_'));
  }

  /**
   * The absolute path of `filename` in the connection's folder; undefined for a name that is not safe or
   * would resolve outside the folder.
   */
  pathFor(connectionId: string, filename: string): string | undefined {
    if (!isSafeMediaName(filename)) return undefined;
    const dir = this.dir(connectionId);
    const full = path.resolve(dir, filename);
    if (path.dirname(full) !== path.resolve(dir)) return undefined;
    return full;
  }

  /** The stored file, if it exists and is a regular file. */
  stat(connectionId: string, filename: string): MediaFile | undefined {
    const p = this.pathFor(connectionId, filename);
    if (!p) return undefined;
    try {
      const st = fs.statSync(p);
      return st.isFile() ? { path: p, size: st.size } : undefined;
    } catch {
      return undefined;
    }
  }

  /** Writes a buffer atomically (temp file + rename). */
  async writeBuffer(connectionId: string, filename: string, data: Uint8Array): Promise<MediaFile> {
    const target = this.#target(connectionId, filename);
    const tmp = `${target}.${randomBytes(6).toString('hex')}.part`;
    try {
      await fs.promises.writeFile(tmp, data, { mode: PRIVATE_FILE_MODE });
      await fs.promises.rename(tmp, target);
    } catch (err) {
      await fs.promises.rm(tmp, { force: true });
      throw err;
    }
    return { path: target, size: data.length };
  }

  /**
   * Streams `source` into the file atomically; `onProgress(bytes)` is called as data arrives.
   * On any error the temp file is removed and nothing is left under the final name.
   */
  async writeStream(
    connectionId: string,
    filename: string,
    source: Readable,
    onProgress?: (bytes: number) => void,
  ): Promise<MediaFile> {
    let target: string;
    try {
      target = this.#target(connectionId, filename);
    } catch (err) {
      // The folder cannot be made (a full or broken disk): release the download, or its connection stays busy.
      source.destroy();
      throw err;
    }
    const tmp = `${target}.${randomBytes(6).toString('hex')}.part`;
    let bytes = 0;
    const counter = new Transform({
      transform(chunk: Buffer, _enc, done) {
        bytes += chunk.length;
        onProgress?.(bytes);
        done(null, chunk);
      },
    });
    try {
      await pipeline(source, counter, fs.createWriteStream(tmp, { flags: 'wx', mode: PRIVATE_FILE_MODE }));
      await fs.promises.rename(tmp, target);
    } catch (err) {
      await fs.promises.rm(tmp, { force: true });
      throw err;
    }
    return { path: target, size: bytes };
  }

  /** Removes a stored file (best effort). */
  async remove(connectionId: string, filename: string): Promise<void> {
    const p = this.pathFor(connectionId, filename);
    if (p) await fs.promises.rm(p, { force: true });
  }

  #target(connectionId: string, filename: string): string {
    const target = this.pathFor(connectionId, filename);
    if (!target) throw new Error(`unsafe media file name ${JSON.stringify(filename)}`);
    fs.mkdirSync(path.dirname(target), { recursive: true, mode: PRIVATE_DIR_MODE });
    return target;
  }
}

/** Content types by extension, for files whose message is not known (e.g. removed from the database). */
const TYPES_BY_EXTENSION: Record<string, string> = {
  jpg: 'image/jpeg',
  png: 'image/png',
  webp: 'image/webp',
  gif: 'image/gif',
  mp4: 'video/mp4',
  '3gp': 'video/3gpp',
  ogg: 'audio/ogg',
  mp3: 'audio/mpeg',
  m4a: 'audio/mp4',
  aac: 'audio/aac',
  pdf: 'application/pdf',
};

export function contentTypeForName(filename: string): string {
  const ext = filename.slice(filename.lastIndexOf('.') + 1).toLowerCase();
  return TYPES_BY_EXTENSION[ext] ?? 'application/octet-stream';
}

/** file-type's names that differ from the ones WhatsApp and this service use. */
const MIME_ALIASES: Record<string, string> = { 'audio/x-m4a': 'audio/mp4', 'audio/x-wav': 'audio/wav', 'audio/vnd.wave': 'audio/wav' };

/**
 * The content type of a file from its bytes (magic numbers and container structure, via `file-type`: also HEIC,
 * AVIF, QuickTime, DOCX/XLSX…), without parameters; undefined when not recognised.
 */
export async function sniffMimetype(data: Uint8Array): Promise<string | undefined> {
  const found = await fileTypeFromBuffer(data);
  if (!found) return undefined;
  const base = found.mime.split(';')[0]!.trim().toLowerCase();
  return MIME_ALIASES[base] ?? base;
}
