/**
 * Media on local disk: `<mediaDir>/<connectionId>/<filename>`, one folder per connection (DESIGN.md §2).
 * Owns the file-name rules (a name never leaves its folder: no `..`, separators or NUL), atomic writes (a temp
 * file in the same folder, then rename, so readers never see half a file) and type sniffing from magic bytes.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
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

/** The content type of a file from its first bytes; undefined when not recognised. */
export function sniffMimetype(data: Uint8Array): string | undefined {
  const b = Buffer.from(data.buffer, data.byteOffset, Math.min(data.length, 64));
  const ascii = (start: number, end: number) => b.subarray(start, end).toString('latin1');
  if (b.length >= 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) return 'image/jpeg';
  if (b.length >= 8 && b.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))) return 'image/png';
  if (ascii(0, 4) === 'GIF8') return 'image/gif';
  if (ascii(0, 4) === 'RIFF' && ascii(8, 12) === 'WEBP') return 'image/webp';
  if (ascii(0, 4) === 'RIFF' && ascii(8, 12) === 'WAVE') return 'audio/wav';
  if (ascii(0, 5) === '%PDF-') return 'application/pdf';
  if (ascii(0, 4) === 'OggS') return 'audio/ogg';
  if (ascii(0, 6) === '#!AMR\n') return 'audio/amr';
  if (ascii(0, 3) === 'ID3') return 'audio/mpeg';
  if (b.length >= 2 && b[0] === 0xff && (b[1]! & 0xf6) === 0xf0) return 'audio/aac'; // ADTS
  if (b.length >= 2 && b[0] === 0xff && (b[1]! & 0xe0) === 0xe0) return 'audio/mpeg'; // MPEG audio frame sync
  if (ascii(4, 8) === 'ftyp') {
    const brand = ascii(8, 12);
    if (brand === 'M4A ' || brand === 'M4B ') return 'audio/mp4';
    if (brand.startsWith('3gp') || brand.startsWith('3g2')) return 'video/3gpp';
    return 'video/mp4';
  }
  if (b.length >= 4 && b[0] === 0x50 && b[1] === 0x4b && b[2] === 0x03 && b[3] === 0x04) return 'application/zip';
  return undefined;
}
