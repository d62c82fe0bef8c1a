/**
 * `media.url` of a Message (issue 17): an absolute URL built from the service's public API base URL, e.g.
 * `http://127.0.0.1:7575/api/connections/<connectionId>/media/<file>`, that a client fetches exactly as given with
 * its `Authorization: Bearer` header (interface-spec §2.5, §6.1). The base is what `serve` prints on its `API:`
 * line, or `--public-url` (a LAN address, a reverse proxy). REST responses, exports, WebSocket events and webhook
 * bodies all get their URLs from `mediaUrl`, so they carry the same value.
 */

/** Base used until the service knows its address (a store opened without an API, e.g. by the CLI or tests). */
export const DEFAULT_MEDIA_BASE = '/api';

/**
 * The media URL of `file` (a name in the connection's media folder, `<key id>.<ext>`) of `connectionId`:
 * `<publicUrl>/connections/<connectionId>/media/<file>`, each segment percent-encoded. `publicUrl` has no
 * trailing slash.
 */
export function mediaUrl(publicUrl: string, connectionId: string, file: string): string {
  return `${publicUrl}/connections/${encodeURIComponent(connectionId)}/media/${encodeURIComponent(file)}`;
}

/** The file name at the end of a media URL (decoded); undefined when there is none or it is not valid. */
export function mediaFileOfUrl(url: string): string | undefined {
  const last = url.slice(url.lastIndexOf('/') + 1);
  try {
    return decodeURIComponent(last) || undefined;
  } catch {
    return undefined;
  }
}

/** The public base URL the service builds media URLs from; set once the API listens (or from `--public-url`). */
export class MediaUrls {
  #base = DEFAULT_MEDIA_BASE;

  /** The current base, e.g. `http://127.0.0.1:7575/api`. */
  get base(): string {
    return this.#base;
  }

  /** Sets the base: an absolute http(s) URL without query or fragment (a trailing `/` is dropped). */
  setBase(publicUrl: string): void {
    this.#base = publicUrl.replace(/\/+$/, '');
  }

  /** `mediaUrl(base, connectionId, file)`. */
  of(connectionId: string, file: string): string {
    return mediaUrl(this.#base, connectionId, file);
  }
}
