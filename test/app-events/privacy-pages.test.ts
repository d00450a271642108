import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, createCompany, createShipment, signUpPerson } from '../support/api.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';
import { signInInBrowser } from '../web/page-client.ts';

describe('privacy requests in the dashboard', () => {
  let w: TestWaybill;
  beforeAll(async () => {
    w = await startWaybill();
  });
  afterAll(async () => {
    await w?.close();
  });

  it('files an erasure from the form and lists it with what the apps were told', async () => {
    const company = await createCompany(w, 'Privacy Page Co');
    const shipment = await createShipment(w, company.liveToken, { recipient_email: 'erase.me@example.com' });
    const owner = await signInInBrowser(w, company.owner.email);
    const form = await owner.get('/dashboard/privacy-requests');
    expect(form.status).toBe(200);
    expect(form.text).toContain('No privacy request yet');
    // An erasure asks once more, naming the shipments it changes; nothing is erased yet.
    const asked = await owner.post('/dashboard/privacy-requests', {
      kind: 'redact',
      email: 'Erase.Me@example.com',
    });
    expect(asked.status).toBe(200);
    expect(asked.text).toContain(shipment.tracking_number);
    const before = await call(w, 'GET', `/v1/shipments/${shipment.id}`, { token: company.liveToken });
    expect(before.body.recipient_name).not.toBe('[redacted]');
    const filed = await owner.post('/dashboard/privacy-requests', {
      kind: 'redact',
      email: 'Erase.Me@example.com',
      confirmed: 'yes',
    });
    expect(filed.status).toBe(303);
    const list = await owner.get('/dashboard/privacy-requests');
    expect(list.text).toContain('nobody was told');
    // The erasure's own record keeps the contact only as [redacted] (decision 0022).
    expect(list.text).not.toContain('erase.me@example.com');
    expect(list.text).toContain('[redacted]');
    const after = await call(w, 'GET', `/v1/shipments/${shipment.id}`, { token: company.liveToken });
    expect(after.body.recipient_name).toBe('[redacted]');

    const bad = await owner.post('/dashboard/privacy-requests', { kind: 'redact', email: '', phone: '' });
    expect(bad.status).toBe(400);
    expect(bad.text).toContain('e-mail');

    const member = await signUpPerson(w, 'Plain Member');
    await call(w, 'POST', `/v1/companies/${company.tenantId}/members`, {
      token: company.owner.token,
      body: { email: member.email, role: 'member' },
    });
    const asMember = await signInInBrowser(w, member.email);
    const refused = await asMember.get('/dashboard/privacy-requests');
    expect(refused.status).toBe(403);
  });
});
