/** Decodes the QR code in a `data:image/png;base64,…` URL (as GET /connections/:id/qr returns) with jsQR. */
import jsQRModule from 'jsqr';
import { PNG } from 'pngjs';

// jsqr is CommonJS with `exports.default`; under NodeNext the default import is the module object.
const jsQR = (jsQRModule as unknown as { default: typeof jsQRModule.default }).default;

export function decodeQrDataUrl(dataUrl: string): string {
  const m = /^data:image\/png;base64,(.+)$/.exec(dataUrl);
  if (!m) throw new Error(`not a PNG data URL: ${dataUrl.slice(0, 40)}…`);
  const png = PNG.sync.read(Buffer.from(m[1]!, 'base64'));
  const code = jsQR(new Uint8ClampedArray(png.data.buffer, png.data.byteOffset, png.data.length), png.width, png.height);
  if (!code) throw new Error('no QR code found in the image');
  return code.data;
}
