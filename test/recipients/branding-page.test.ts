import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, createCompany, signUpPerson } from '../support/api.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';
import { signInInBrowser } from '../web/page-client.ts';

describe('the dashboard branding page', () => {
  let w: TestWaybill;
  beforeAll(async () => {
    w = await startWaybill();
  });
  afterAll(async () => {
    await w?.close();
  });

  it('saves the branding and notifications with a redirect, refuses a low-contrast colour, and previews', async () => {
    const company = await createCompany(w, 'Page Fox');
    const client = await signInInBrowser(w, company.owner.email);
    const form = await client.get('/dashboard/settings/branding');
    expect(form.status).toBe(200);
    expect(form.text).toContain('id="preview-band"');
    expect(form.text).toContain('<script src="/static/branding-preview.js"></script>');
    const saved = await client.post('/dashboard/settings/branding', {
      display_name: 'Fox Parcels',
      accent_color: '#0b6e4f',
      support_url: 'https://help.example.test/',
      enabled: 'on',
      events: ['delivered', 'exception'],
    });
    expect(saved.status).toBe(303);
    const shown = await client.follow(saved);
    expect(shown.text).toContain('Branding saved.');
    expect(shown.text).toContain('data-accent="#0b6e4f"');
    const api = await call(w, 'PATCH', `/v1/companies/${company.tenantId}`, {
      token: company.owner.token,
      body: {},
    });
    expect(api.body.branding).toMatchObject({ display_name: 'Fox Parcels', accent_color: '#0b6e4f' });
    expect(api.body.recipient_notifications).toEqual({ enabled: true, events: ['delivered', 'exception'] });

    const refused = await client.post('/dashboard/settings/branding', {
      display_name: 'Grey',
      accent_color: '#7a7a7a',
    });
    // Refused: 303 back to the form, the values as typed and the error beside the field (decision 0083).
    expect(refused.status).toBe(303);
    const again = await client.follow(refused);
    expect(again.text).toContain('value="Grey"');
    expect(again.text).toContain('aria-invalid="true"');
    const after = await call(w, 'PATCH', `/v1/companies/${company.tenantId}`, {
      token: company.owner.token,
      body: {},
    });
    expect(after.body.branding.display_name).toBe('Fox Parcels');
    expect((await client.get('/static/branding-preview.js')).status).toBe(200);
  });

  it('is for owners and admins only', async () => {
    const company = await createCompany(w, 'Member Fox');
    const member = await signUpPerson(w, 'Member');
    await call(w, 'POST', `/v1/companies/${company.tenantId}/members`, {
      token: company.owner.token,
      body: { email: member.email, role: 'member' },
    });
    const client = await signInInBrowser(w, member.email);
    expect((await client.get('/dashboard/settings/branding')).status).toBe(403);
    expect((await client.get('/dashboard/shipments')).text).not.toContain('/dashboard/settings/branding');
  });
});
