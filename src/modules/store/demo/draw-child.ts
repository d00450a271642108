// The demo's listing images, drawn and checked in a short-lived process of their own (media.ts
// starts it: the looks as JSON on stdin, the checked images as JSON on stdout), so that the
// server never loads libvips for its seed (decision 0075).
import { text } from 'node:stream/consumers';
import type { DemoLook } from './images.ts';
import { type DemoMedia, drawDemoMediaHere, toWire } from './media.ts';

const looks = JSON.parse(await text(process.stdin)) as DemoLook[];
const media: DemoMedia[] = [];
for (const look of looks) media.push(await drawDemoMediaHere(look));
process.stdout.write(toWire(media));
