/**
 * The console's icon, drawn in code (no image tools needed): a dark rounded square with
 * an attention block (blue) and an FFN block (amber) joined by two transfer arrows, as an
 * RGBA PNG. Written at packaging time to app/out/build-resources/icon.png.
 */
import { deflateSync } from 'node:zlib';

const CRC_TABLE = Uint32Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

export function crc32(bytes: Uint8Array): number {
  let c = 0xffffffff;
  for (const b of bytes) c = CRC_TABLE[(c ^ b) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function chunk(type: string, data: Uint8Array): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(data.length, 0);
  head.write(type, 4, 'ascii');
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), data])), 0);
  return Buffer.concat([head, data, crc]);
}

/** Encodes RGBA pixels (width x height x 4 bytes) as a PNG. */
export function encodePng(width: number, height: number, rgba: Uint8Array): Buffer {
  if (rgba.length !== width * height * 4) throw new Error(`encodePng: ${rgba.length} bytes for ${width} x ${height} RGBA`);
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 6; // RGBA
  const raw = Buffer.alloc((width * 4 + 1) * height);
  for (let y = 0; y < height; y++) {
    raw[y * (width * 4 + 1)] = 0; // filter: none
    Buffer.from(rgba.buffer, rgba.byteOffset + y * width * 4, width * 4).copy(raw, y * (width * 4 + 1) + 1);
  }
  return Buffer.concat([Buffer.from([137, 80, 78, 71, 13, 10, 26, 10]), chunk('IHDR', ihdr), chunk('IDAT', deflateSync(raw)), chunk('IEND', new Uint8Array(0))]);
}

/** The icon at `size` x `size` pixels (electron-builder wants at least 256 for Linux). */
export function consoleIcon(size = 512): Buffer {
  const px = new Uint8Array(size * size * 4);
  const put = (x: number, y: number, [r, g, b]: readonly number[]): void => {
    const i = (y * size + x) * 4;
    px[i] = r!;
    px[i + 1] = g!;
    px[i + 2] = b!;
    px[i + 3] = 255;
  };
  const u = size / 16;
  const radius = 3 * u;
  const inRounded = (x: number, y: number, x0: number, y0: number, x1: number, y1: number, r: number): boolean => {
    const cx = Math.min(Math.max(x, x0 + r), x1 - r);
    const cy = Math.min(Math.max(y, y0 + r), y1 - r);
    return (x - cx) ** 2 + (y - cy) ** 2 <= r * r && x >= x0 && x < x1 && y >= y0 && y < y1;
  };
  const BG = [20, 23, 28];
  const ATT = [94, 177, 255];
  const FFN = [255, 209, 102];
  const ARROW = [230, 233, 239];
  for (let y = 0; y < size; y++) {
    for (let x = 0; x < size; x++) {
      if (!inRounded(x, y, 0, 0, size, size, radius)) continue; // transparent corner
      let c = BG;
      if (inRounded(x, y, 2 * u, 3 * u, 6.5 * u, 13 * u, u)) c = ATT;
      else if (inRounded(x, y, 9.5 * u, 3 * u, 14 * u, 13 * u, u)) c = FFN;
      // A->F arrow (upper) and F->A arrow (lower): shafts and heads.
      else if (y > 5.6 * u && y < 6.4 * u && x > 7 * u && x < 8.4 * u) c = ARROW;
      else if (x >= 8.4 * u && x < 9.2 * u && Math.abs(y - 6 * u) < (9.2 * u - x) * 0.9) c = ARROW;
      else if (y > 9.6 * u && y < 10.4 * u && x > 7.6 * u && x < 9 * u) c = ARROW;
      else if (x > 6.8 * u && x <= 7.6 * u && Math.abs(y - 10 * u) < (x - 6.8 * u) * 0.9) c = ARROW;
      put(x, y, c);
    }
  }
  return encodePng(size, size, px);
}
