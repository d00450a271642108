import { deflateSync } from 'node:zlib';
import sharp from 'sharp';

/** A picture with some detail (a gradient and a disc), so that encoders have work to do. */
function drawing(width: number, height: number, hue: string): Buffer {
  return Buffer.from(`<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}">
  <defs><linearGradient id="g" x1="0" y1="0" x2="1" y2="1">
    <stop offset="0" stop-color="${hue}"/><stop offset="1" stop-color="#ffffff"/></linearGradient></defs>
  <rect width="100%" height="100%" fill="url(#g)"/>
  <circle cx="${width / 2}" cy="${height / 2}" r="${Math.min(width, height) / 3}" fill="#123456"/>
</svg>`);
}

export function png(width: number, height: number, hue = '#3366cc'): Promise<Buffer> {
  return sharp(drawing(width, height, hue))
    .png()
    .toBuffer();
}

/** A JPEG carrying EXIF (a camera model and a copyright line) that the store must strip. */
export function jpegWithExif(width: number, height: number): Promise<Buffer> {
  return sharp(drawing(width, height, '#cc6633'))
    .jpeg()
    .withExif({ IFD0: { Model: 'Secret Camera 9000', Copyright: 'Private Person' } })
    .toBuffer();
}

/** Random pixels: PNG cannot compress them, so the file is about width × height × 3 bytes. */
export function noisePng(width: number, height: number): Promise<Buffer> {
  const pixels = Buffer.alloc(width * height * 3);
  for (let i = 0; i < pixels.length; i++) pixels[i] = (i * 2654435761) >>> 24;
  return sharp(pixels, { raw: { width, height, channels: 3 } })
    .png({ compressionLevel: 0 })
    .toBuffer();
}

export const SVG = Buffer.from(
  '<svg xmlns="http://www.w3.org/2000/svg" width="512" height="512"><rect width="512" height="512" fill="red"/></svg>',
);

function chunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, 'ascii'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([length, body, crc]);
}

function crc32(data: Buffer): number {
  let crc = 0xffffffff;
  for (const byte of data) {
    crc ^= byte;
    for (let k = 0; k < 8; k++) crc = crc & 1 ? (crc >>> 1) ^ 0xedb88320 : crc >>> 1;
  }
  return (crc ^ 0xffffffff) >>> 0;
}

/**
 * A decompression bomb: a valid PNG of `size` × `size` one-bit pixels, all zero, a few kilobytes on
 * the wire and hundreds of megabytes once decoded to RGBA.
 */
export function pngBomb(size = 20000): Buffer {
  const header = Buffer.alloc(13);
  header.writeUInt32BE(size, 0);
  header.writeUInt32BE(size, 4);
  header[8] = 1; // bit depth
  header[9] = 0; // greyscale
  const row = 1 + Math.ceil(size / 8);
  const pixels = deflateSync(Buffer.alloc(row * size), { level: 9 });
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', header),
    chunk('IDAT', pixels),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}
