import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MINUTE, SECOND } from '../../src/lib/clock.ts';
import { sendDueNotifications } from '../../src/modules/recipients/mail-sender.ts';
import { type CompanyFixture, call, createCompany, createShipment, type Json } from '../support/api.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';

interface Received {
  to: string[];
  raw: string;
}

let counter = 0;
const nextAddress = () => `parcel.person${++counter}@example.test`;

describe('recipient notifications over SMTP', () => {
  let w: TestWaybill;
  let smtp: SMTPServer;
  let company: CompanyFixture;
  const received: Received[] = [];
  let refusing = false;
  beforeAll(async () => {
    smtp = new SMTPServer({
      authOptional: true,
      disabledCommands: ['AUTH', 'STARTTLS'],
      onRcptTo(_address, _session, callback) {
        if (refusing) {
          const error = Object.assign(new Error('try again later'), { responseCode: 451 });
          return callback(error);
        }
        callback();
      },
      onData(stream, session, callback) {
        const chunks: Buffer[] = [];
        stream.on('data', (c: Buffer) => chunks.push(c));
        stream.on('end', () => {
          received.push({
            to: session.envelope.rcptTo.map((r) => r.address),
            raw: Buffer.concat(chunks).toString(),
          });
          callback();
        });
      },
    });
    await new Promise<void>((resolve) => smtp.listen(0, '127.0.0.1', resolve));
    const { port } = smtp.server.address() as AddressInfo;
    w = await startWaybill({ env: { WAYBILL_SMTP_URL: `smtp://127.0.0.1:${port}` } });
    company = await createCompany(w, 'Parcel Fox Ltd');
    const set = await call(w, 'PATCH', `/v1/companies/${company.tenantId}`, {
      token: company.owner.token,
      body: {
        branding: { display_name: 'Parcel Fox', accent_color: '#0b6e4f' },
        recipient_notifications: {
          enabled: true,
          events: ['picked_up', 'out_for_delivery', 'delivered', 'exception'],
        },
      },
    });
    expect(set.status, set.text).toBe(200);
    expect(set.body.recipient_notifications).toEqual({
      enabled: true,
      events: ['picked_up', 'out_for_delivery', 'delivered', 'exception'],
    });
  });
  afterAll(async () => {
    await w?.close();
    await new Promise<void>((resolve) => smtp?.close(() => resolve()));
  });

  const mailsTo = (address: string) => received.filter((mail) => mail.to.includes(address));
  const move = async (token: string, id: string, ...statuses: string[]) => {
    for (const status of statuses) {
      const moved = await call(w, 'POST', `/v1/shipments/${id}/status`, { token, body: { status } });
      expect(moved.status, moved.text).toBe(200);
    }
  };
  const log = async (id: string, token = company.liveToken): Promise<Json[]> => {
    const answer = await call(w, 'GET', `/v1/shipments/${id}/notifications`, { token });
    expect(answer.status, answer.text).toBe(200);
    return answer.body.data;
  };

  it('mails each chosen milestone once, after the request, with the brand, the link and the RFC 8058 headers', async () => {
    const address = nextAddress();
    const shipment = await createShipment(w, company.liveToken, {
      recipient_email: address,
      recipient_name: 'Ada Byron',
    });
    await move(company.liveToken, shipment.id, 'picked_up');
    // Queued in the move's transaction, sent by the queue's worker, never in the request.
    expect(mailsTo(address)).toHaveLength(0);
    expect((await log(shipment.id)).map((n) => [n.event, n.status])).toEqual([['picked_up', 'queued']]);
    await sendDueNotifications(w.ctx);
    const [mail] = mailsTo(address);
    expect(mail).toBeDefined();
    const raw = (mail?.raw ?? '').replace(/=\r?\n/g, '');
    expect(raw).toMatch(/^Subject: Parcel Fox: Your parcel has been picked up/m);
    expect(raw).toMatch(/^From: Parcel Fox <no-reply@waybill\.invalid>/m);
    expect(raw).toContain(shipment.tracking_url);
    const unsubscribe = /^List-Unsubscribe: <([^>]+)>/m.exec(raw)?.[1];
    expect(unsubscribe).toMatch(new RegExp(`^${w.ctx.config.webUrl}/u/[A-Za-z0-9]{24}$`));
    expect(raw).toMatch(/^List-Unsubscribe-Post: List-Unsubscribe=One-Click/m);
    expect(raw).not.toContain('Ada Byron');
    expect(raw).not.toContain(shipment.id);
    expect(raw).not.toContain(company.tenantId);

    await move(
      company.liveToken,
      shipment.id,
      'exception',
      'in_transit',
      'exception',
      'out_for_delivery',
      'delivered',
    );
    await sendDueNotifications(w.ctx);
    await sendDueNotifications(w.ctx);
    const subjects = mailsTo(address).map((m) => /^Subject: (.*)$/m.exec(m.raw)?.[1]);
    expect(subjects).toEqual([
      'Parcel Fox: Your parcel has been picked up',
      'Parcel Fox: There is a problem with your parcel',
      'Parcel Fox: Your parcel is out for delivery',
      'Parcel Fox: Your parcel has been delivered',
    ]);
    const entries = await log(shipment.id);
    expect(entries.map((n) => n.event)).toEqual(['delivered', 'out_for_delivery', 'exception', 'picked_up']);
    for (const entry of entries) {
      expect(entry).toEqual({
        id: expect.stringMatching(/^rnt_/),
        event: entry.event,
        to: 'p***@e***.test',
        status: 'sent',
        reason: null,
        created_at: expect.any(String),
      });
    }
  });

  it('mails `delayed` once when the estimate slips (PATCH or a checkpoint), and nothing for an earlier one', async () => {
    const chosen = ['picked_up', 'out_for_delivery', 'delivered', 'exception', 'delayed'];
    const set = await call(w, 'PATCH', `/v1/companies/${company.tenantId}`, {
      token: company.owner.token,
      body: { recipient_notifications: { events: chosen } },
    });
    expect(set.body.recipient_notifications.events).toEqual(chosen);
    const estimate = (day: number) => ({
      earliest: `2026-11-${day}T08:00:00Z`,
      latest: `2026-11-${day}T18:00:00Z`,
      source: 'carrier',
    });
    const patch = async (id: string, day: number) => {
      const patched = await call(w, 'PATCH', `/v1/shipments/${id}`, {
        token: company.liveToken,
        body: { estimated_delivery: estimate(day) },
      });
      expect(patched.status, patched.text).toBe(200);
    };
    const checkpoint = async (id: string, message: string, day: number) => {
      const added = await call(w, 'POST', `/v1/shipments/${id}/checkpoints`, {
        token: company.liveToken,
        body: { occurred_at: '2026-11-21T13:00:00Z', message, estimated_delivery: estimate(day) },
      });
      expect(added.status, added.text).toBe(201);
    };
    const subjects = (address: string) => mailsTo(address).map((m) => /^Subject: (.*)$/m.exec(m.raw)?.[1]);
    try {
      // Sooner than thought, then the same again: not delayed, nothing sent.
      const early = nextAddress();
      const sooner = await createShipment(w, company.liveToken, {
        recipient_email: early,
        estimated_delivery: estimate(26),
      });
      await patch(sooner.id, 24);
      await patch(sooner.id, 24);
      await sendDueNotifications(w.ctx);
      expect(mailsTo(early)).toHaveLength(0);
      expect(await log(sooner.id)).toEqual([]);

      // Later than thought by PATCH, then later again by a checkpoint: one e-mail, never two.
      const late = nextAddress();
      const shipment = await createShipment(w, company.liveToken, {
        recipient_email: late,
        estimated_delivery: estimate(24),
      });
      await patch(shipment.id, 25);
      expect(mailsTo(late)).toHaveLength(0);
      await sendDueNotifications(w.ctx);
      expect(subjects(late)).toEqual(['Parcel Fox: Your parcel is delayed']);
      const raw = (mailsTo(late)[0]?.raw ?? '').replace(/=\r?\n/g, '');
      expect(raw).toContain(shipment.tracking_url);
      expect(raw).toMatch(/^List-Unsubscribe-Post: List-Unsubscribe=One-Click/m);
      await checkpoint(shipment.id, 'Held up by the weather', 27);
      await sendDueNotifications(w.ctx);
      expect(subjects(late)).toEqual(['Parcel Fox: Your parcel is delayed']);
      expect((await log(shipment.id)).map((n) => [n.event, n.status])).toEqual([['delayed', 'sent']]);

      // A checkpoint alone that slips the estimate of another shipment mails it too.
      const third = nextAddress();
      const other = await createShipment(w, company.liveToken, {
        recipient_email: third,
        estimated_delivery: estimate(24),
      });
      await checkpoint(other.id, 'Missed the truck', 25);
      await sendDueNotifications(w.ctx);
      expect(subjects(third)).toEqual(['Parcel Fox: Your parcel is delayed']);
    } finally {
      await call(w, 'PATCH', `/v1/companies/${company.tenantId}`, {
        token: company.owner.token,
        body: {
          recipient_notifications: { events: ['picked_up', 'out_for_delivery', 'delivered', 'exception'] },
        },
      });
    }
  });

  it('sends nothing for a milestone the company did not choose, nor when it is off', async () => {
    const address = nextAddress();
    const shipment = await createShipment(w, company.liveToken, { recipient_email: address });
    await call(w, 'PATCH', `/v1/companies/${company.tenantId}`, {
      token: company.owner.token,
      body: { recipient_notifications: { events: ['delivered'] } },
    });
    await move(company.liveToken, shipment.id, 'picked_up', 'in_transit');
    await call(w, 'PATCH', `/v1/companies/${company.tenantId}`, {
      token: company.owner.token,
      body: { recipient_notifications: { enabled: false } },
    });
    await move(company.liveToken, shipment.id, 'out_for_delivery', 'delivered');
    await sendDueNotifications(w.ctx);
    expect(mailsTo(address)).toHaveLength(0);
    expect(await log(shipment.id)).toEqual([]);
    await call(w, 'PATCH', `/v1/companies/${company.tenantId}`, {
      token: company.owner.token,
      body: {
        recipient_notifications: {
          enabled: true,
          events: ['picked_up', 'out_for_delivery', 'delivered', 'exception'],
        },
      },
    });
  });

  it('keeps a test shipment’s mail in the outbox, never on SMTP', async () => {
    const address = nextAddress();
    const shipment = await createShipment(w, company.testToken, { recipient_email: address });
    await move(company.testToken, shipment.id, 'picked_up');
    await sendDueNotifications(w.ctx);
    expect(mailsTo(address)).toHaveLength(0);
    const entries = await log(shipment.id, company.testToken);
    expect(entries.map((n) => [n.status, n.reason])).toEqual([['sent', 'test_mode_outbox']]);
    const outbox = await w.ctx.db.selectFrom('mail_outbox').select(['subject', 'body', 'sent_at']).execute();
    const kept = outbox.find((m) => m.body.includes(shipment.tracking_url));
    expect(kept?.subject).toBe('Parcel Fox: Your parcel has been picked up');
    expect(kept?.sent_at).toBeNull();
  });

  it('unsubscribes in one click: the POST of RFC 8058, and no e-mail after it', async () => {
    const address = nextAddress();
    const shipment = await createShipment(w, company.liveToken, { recipient_email: address });
    await move(company.liveToken, shipment.id, 'picked_up');
    await sendDueNotifications(w.ctx);
    const link = /^List-Unsubscribe: <([^>]+)>/m.exec(mailsTo(address)[0]?.raw ?? '')?.[1] ?? '';
    const path = new URL(link).pathname;
    // Opening the link changes nothing (a scanner's GET); the page has one button.
    const page = await w.app.inject({ method: 'GET', url: path });
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain(`<form method="post" action="${path}">`);
    const oneClick = await w.app.inject({
      method: 'POST',
      url: path,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'List-Unsubscribe=One-Click',
    });
    expect(oneClick.statusCode).toBe(200);
    expect(oneClick.body).toContain('You will get no more e-mails');
    const other = await createShipment(w, company.liveToken, { recipient_email: address.toUpperCase() });
    await move(company.liveToken, shipment.id, 'in_transit', 'out_for_delivery');
    await move(company.liveToken, other.id, 'picked_up');
    await sendDueNotifications(w.ctx);
    expect(mailsTo(address)).toHaveLength(1);
    expect((await log(shipment.id))[0]).toMatchObject({
      event: 'out_for_delivery',
      status: 'suppressed',
      reason: 'unsubscribed',
    });
    expect((await log(other.id))[0]).toMatchObject({ status: 'suppressed', reason: 'unsubscribed' });
    expect((await w.app.inject({ method: 'POST', url: '/u/NoSuchTokenNoSuchToken00' })).statusCode).toBe(404);
  });

  it('waits out an SMTP server that refuses for a while, loses nothing and moves no shipment back', async () => {
    const address = nextAddress();
    const shipment = await createShipment(w, company.liveToken, { recipient_email: address });
    refusing = true;
    await move(company.liveToken, shipment.id, 'picked_up');
    await sendDueNotifications(w.ctx);
    let [entry] = await log(shipment.id);
    expect(entry).toMatchObject({ status: 'queued', reason: 'smtp: 451' });
    // Not due again before its retry time.
    w.clock.advance(10 * SECOND);
    await sendDueNotifications(w.ctx);
    w.clock.advance(30 * SECOND);
    await sendDueNotifications(w.ctx);
    expect(mailsTo(address)).toHaveLength(0);
    const attempts = await w.ctx.db
      .selectFrom('recipient_notifications')
      .select('attempts')
      .where('shipment_id', '=', shipment.id)
      .executeTakeFirstOrThrow();
    expect(attempts.attempts).toBe(2);
    refusing = false;
    w.clock.advance(2 * MINUTE);
    await sendDueNotifications(w.ctx);
    expect(mailsTo(address)).toHaveLength(1);
    [entry] = await log(shipment.id);
    expect(entry).toMatchObject({ status: 'sent', reason: null });
    const after = await call(w, 'GET', `/v1/shipments/${shipment.id}`, { token: company.liveToken });
    expect(after.body.status).toBe('picked_up');
  });

  it('erasure removes what is queued and masks what was sent', async () => {
    const address = nextAddress();
    const shipment = await createShipment(w, company.liveToken, { recipient_email: address });
    await move(company.liveToken, shipment.id, 'picked_up');
    await sendDueNotifications(w.ctx);
    await move(company.liveToken, shipment.id, 'in_transit', 'out_for_delivery');
    expect((await log(shipment.id)).map((n) => n.status)).toEqual(['queued', 'sent']);
    const erased = await call(w, 'POST', `/v1/companies/${company.tenantId}/privacy-requests`, {
      token: company.owner.token,
      body: { kind: 'redact', recipient: { email: address } },
    });
    expect(erased.status, erased.text).toBe(201);
    const entries = await log(shipment.id);
    expect(entries.map((n) => [n.event, n.status, n.to])).toEqual([['picked_up', 'sent', '[redacted]']]);
    await sendDueNotifications(w.ctx);
    expect(mailsTo(address)).toHaveLength(1);
    const rows = await w.ctx.db
      .selectFrom('recipient_notifications')
      .select(['to_address', 'to_masked'])
      .where('shipment_id', '=', shipment.id)
      .execute();
    expect(rows).toEqual([{ to_address: null, to_masked: '[redacted]' }]);
  });
});
