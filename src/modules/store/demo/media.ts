import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { Logger } from 'pino';
import { type CheckedImage, checkImage } from '../media/images.ts';
import { type DemoLook, demoIcon, demoScreenshot } from './images.ts';

/** A demo app's listing images, drawn and put through the upload checks (`checkImage`). */
export interface DemoMedia {
  icon: CheckedImage;
  screenshots: CheckedImage[];
}

const SCREENSHOT_VARIANTS = [0, 1];

/** Draws one app's images and checks them as a developer's uploads are checked, in this process. */
export async function drawDemoMediaHere(look: DemoLook): Promise<DemoMedia> {
  const icon = await checkImage('icon', await demoIcon(look), 'image/png');
  const screenshots: CheckedImage[] = [];
  for (const variant of SCREENSHOT_VARIANTS) {
    screenshots.push(await checkImage('screenshot', await demoScreenshot(look, variant), 'image/png'));
  }
  return { icon, screenshots };
}

/** A checked image as the child writes it: JSON, the bytes in base64. */
type Wire = Omit<CheckedImage, 'content'> & { content: string };

export function toWire(media: DemoMedia[]): string {
  const image = ({ content, ...rest }: CheckedImage): Wire => ({
    ...rest,
    content: content.toString('base64'),
  });
  return JSON.stringify(
    media.map((set) => ({ icon: image(set.icon), screenshots: set.screenshots.map(image) })),
  );
}

function fromWire(text: string): DemoMedia[] {
  const image = ({ content, ...rest }: Wire): CheckedImage => ({
    ...rest,
    content: Buffer.from(content, 'base64'),
  });
  return (JSON.parse(text) as { icon: Wire; screenshots: Wire[] }[]).map((set) => ({
    icon: image(set.icon),
    screenshots: set.screenshots.map(image),
  }));
}

const CHILD_SCRIPT = fileURLToPath(new URL('./draw-child.ts', import.meta.url));

/** The looks' images from a child process running draw-child.ts (looks on its stdin, images on its stdout). */
async function drawInChild(looks: DemoLook[]): Promise<DemoMedia[]> {
  const child = spawn(process.execPath, [CHILD_SCRIPT], { stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  // A child that dies before reading its input must not fail this process with EPIPE.
  child.stdin.on('error', () => {});
  child.stdin.end(JSON.stringify(looks));
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (exitCode) => resolve(exitCode));
  });
  if (code !== 0) throw new Error(stderr.trim().split('\n').at(-1) || `the child exited with ${code}`);
  return fromWire(stdout);
}

/**
 * The demo apps' listing images, drawn from their SVG and checked as uploads (`checkImage`:
 * decoded, sized, re-encoded) in a short-lived child process. In this process, sharp's libvips
 * would stay loaded with its memory mapped after the seed (its threads' malloc arenas): a first
 * start's idle RSS was 60 to 90 MB above a restart's (issue 41 item 4, decision 0075). If the child
 * cannot do it, the images are drawn here, as they always were.
 */
export async function drawDemoMedia(looks: DemoLook[], log: Logger): Promise<DemoMedia[]> {
  try {
    return await drawInChild(looks);
  } catch (err) {
    log.warn({ err }, 'drawing the demo images in a child process failed; drawing them in this one');
    const media: DemoMedia[] = [];
    for (const look of looks) media.push(await drawDemoMediaHere(look));
    return media;
  }
}
