/**
 * Test images: a valid PNG of `width` × `height` pixels (pngjs), the same bytes for the same arguments; another
 * `seed` gives other pixels, so two images of one size can differ (media de-duplication, distinct downloads).
 */
import { PNG } from 'pngjs';

export function pngBytes(width = 8, height = 8, seed = 0): Buffer {
  const png = new PNG({ width, height });
  for (let i = 0; i < png.data.length; i += 4) png.data.set([(i + seed) % 255, seed % 256, 200, 255], i);
  return PNG.sync.write(png);
}
