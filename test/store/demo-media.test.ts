import pino from 'pino';
import { describe, expect, it } from 'vitest';
import type { DemoLook } from '../../src/modules/store/demo/images.ts';
import { drawDemoMedia, drawDemoMediaHere } from '../../src/modules/store/demo/media.ts';

const LOOK: DemoLook = {
  name: 'Test Look',
  colour: '#2b6cb0',
  accent: '#63b3ed',
  rows: ['One row', 'Another: <&> "quoted"'],
};

describe('the demo listing images (decision 0075)', () => {
  it('are drawn and checked in a child process, the same bytes as drawn in this one', async () => {
    const [child] = await drawDemoMedia([LOOK], pino({ level: 'silent' }));
    const here = await drawDemoMediaHere(LOOK);
    expect(child).toBeDefined();
    expect(child?.icon).toMatchObject({ format: 'png', content_type: 'image/png', width: 512, height: 512 });
    expect(child?.screenshots.map(({ width, height }) => [width, height])).toEqual([
      [1280, 720],
      [1280, 720],
    ]);
    expect(child?.icon.content.equals(here.icon.content)).toBe(true);
    expect(child?.screenshots.map((shot) => shot.content.toString('base64'))).toEqual(
      here.screenshots.map((shot) => shot.content.toString('base64')),
    );
  });
});
