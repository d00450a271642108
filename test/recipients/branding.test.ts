import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CompanyFixture, call, createCompany, createShipment, signUpPerson } from '../support/api.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';

async function png(width: number, height: number): Promise<Buffer> {
  return sharp({ create: { width, height, channels: 3, background: '#0b6e4f' } })
    .png()
    .withMetadata({ exif: { IFD0: { Copyright: 'secret-exif-marker' } } })
    .toBuffer();
}

describe('branding', () => {
  let w: TestWaybill;
  let company: CompanyFixture;
  beforeAll(async () => {
    w = await startWaybill();
    company = await createCompany(w, 'Parcel Fox Ltd');
  });
  afterAll(async () => {
    await w?.close();
  });

  const patch = (body: unknown, token = company.owner.token) =>
    call(w, 'PATCH', `/v1/companies/${company.tenantId}`, { token, body });

  it('sets the display name, accent and support link, and the page wears them', async () => {
    const set = await patch({
      branding: {
        display_name: 'Parcel Fox',
        accent_color: '#0B6E4F',
        support_url: 'https://help.example.test/',
      },
    });
    expect(set.status, set.text).toBe(200);
    expect(set.body.id).toBe(company.tenantId);
    expect(set.body.branding).toEqual({
      display_name: 'Parcel Fox',
      accent_color: '#0b6e4f',
      support_url: 'https://help.example.test/',
      logo: null,
    });
    expect(set.body.agent_access).toEqual({ test: true, live: false });
    const shipment = await createShipment(w, company.liveToken);
    const page = await w.app.inject({ method: 'GET', url: new URL(shipment.tracking_url).pathname });
    expect(page.body).toContain('<p class="brand-name">Parcel Fox</p>');
    expect(page.body).toContain('--brand:#0b6e4f;--on-brand:#ffffff;');
    expect(page.body).toContain('href="https://help.example.test/"');
    // A light accent gets dark text.
    const light = await patch({ branding: { accent_color: '#ffd60a' } });
    expect(light.status).toBe(200);
    const again = await w.app.inject({ method: 'GET', url: new URL(shipment.tracking_url).pathname });
    expect(again.body).toContain('--brand:#ffd60a;--on-brand:#1b1f24;');
  });

  it('refuses a colour no text reads on, and writes nothing of the request', async () => {
    const before = await patch({ branding: { display_name: 'Before' } });
    expect(before.status).toBe(200);
    const refused = await patch({
      branding: { display_name: 'After', accent_color: '#7a7a7a' },
      agent_access: { test: false },
    });
    expect(refused.status).toBe(422);
    expect(refused.headers['content-type']).toMatch(/problem\+json/);
    expect(refused.body.code).toBe('branding.accent_color_contrast');
    expect(refused.body.errors[0].path).toBe('/branding/accent_color');
    const after = await patch({});
    expect(after.body.branding.display_name).toBe('Before');
    expect(after.body.agent_access.test).toBe(true);
    const malformed = await patch({ branding: { accent_color: 'green' } });
    expect(malformed.status).toBe(400);
    expect(malformed.body.errors[0].path).toBe('/branding/accent_color');
  });

  it('lets only owners and admins change it', async () => {
    const member = await signUpPerson(w, 'Member');
    const added = await call(w, 'POST', `/v1/companies/${company.tenantId}/members`, {
      token: company.owner.token,
      body: { email: member.email, role: 'member' },
    });
    expect(added.status, added.text).toBe(201);
    expect((await patch({ branding: { display_name: 'Nope' } }, member.token)).status).toBe(403);
    expect((await call(w, 'PATCH', `/v1/companies/${company.tenantId}`, { body: {} })).status).toBe(401);
    const stranger = await signUpPerson(w, 'Stranger');
    expect((await patch({ branding: { display_name: 'Nope' } }, stranger.token)).status).toBe(404);
  });

  it('takes a logo by its bytes, re-encodes it, and serves it on the page', async () => {
    const upload = (body: Buffer, type = 'application/octet-stream') =>
      w.app.inject({
        method: 'PUT',
        url: `/v1/companies/${company.tenantId}/branding/logo`,
        headers: { authorization: `Bearer ${company.owner.token}`, 'content-type': type },
        payload: body,
      });
    const original = await png(800, 200);
    expect(original.includes('secret-exif-marker')).toBe(true);
    const stored = await upload(original, 'image/jpeg');
    expect(stored.statusCode, stored.body).toBe(200);
    expect(JSON.parse(stored.body).branding.logo.content_type).toBe('image/png');

    const notImage = await upload(Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"></svg>'), 'image/png');
    expect(notImage.statusCode).toBe(422);
    expect(JSON.parse(notImage.body).code).toBe('branding.logo_invalid');
    const gif = await sharp({ create: { width: 10, height: 10, channels: 3, background: '#000' } })
      .gif()
      .toBuffer();
    expect((await upload(gif, 'image/gif')).statusCode).toBe(422);
    const big = Buffer.concat([original, Buffer.alloc(1024 * 1024)]);
    expect((await upload(big)).statusCode).toBe(422);

    const shipment = await createShipment(w, company.liveToken);
    const page = await w.app.inject({ method: 'GET', url: new URL(shipment.tracking_url).pathname });
    const src = /<img src="([^"]+)" alt="([^"]+)">/.exec(page.body);
    expect(src?.[2]).toBe('Before');
    const logo = await w.app.inject({ method: 'GET', url: src?.[1] ?? '' });
    expect(logo.statusCode).toBe(200);
    expect(logo.headers['content-type']).toBe('image/png');
    expect(logo.rawPayload.includes('secret-exif-marker')).toBe(false);
    const meta = await sharp(logo.rawPayload).metadata();
    expect([meta.width, meta.height]).toEqual([512, 128]);
    const unknown = await w.app.inject({ method: 'GET', url: '/t/NoSuchTokenNoSuchToken00/logo' });
    expect(unknown.statusCode).toBe(404);
  });
});
