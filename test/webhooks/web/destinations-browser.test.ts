import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  consumeQueue,
  type QueueConsumer,
  type RabbitPlace,
  rabbitMqMissing,
  rabbitPlace,
} from '../../delivery/brokers.ts';
import { type CompanyFixture, createCompany } from '../../support/api.ts';
import { hasChromium, launchChromium } from '../../support/browser.ts';
import { startWaybill, type TestWaybill } from '../../support/harness.ts';
import { PASSWORD } from '../../web/page-client.ts';

/** The dashboard's endpoint form with the destination kind (issue 43 item 6), in Chromium. */
const rabbitMissing = await rabbitMqMissing();
if (rabbitMissing) console.warn(`destinations pages: skipped: ${rabbitMissing}`);
if (!hasChromium) console.warn('destinations pages: skipped: no Chromium at /usr/bin/chromium');

describe.skipIf(rabbitMissing !== null || !hasChromium)('a RabbitMQ destination on the dashboard', () => {
  let w: TestWaybill;
  let company: CompanyFixture;
  let place: RabbitPlace;
  let consumer: QueueConsumer;
  let browser: Browser;

  beforeAll(async () => {
    w = await startWaybill();
    company = await createCompany(w);
    place = await rabbitPlace();
    consumer = await consumeQueue(place, 'from-the-page', 'shipment.#');
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await consumer?.close();
    await w?.close();
    await place?.dispose();
  });

  it('adds the endpoint with its kind, shows the URL masked, and a test send shows what the broker answered', async () => {
    const page = await browser.newPage();
    await page.goto(`${w.url}/signin?return_to=${encodeURIComponent('/dashboard/webhooks/new')}`);
    await page.getByLabel('E-mail').fill(company.owner.email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Add a webhook endpoint' }).waitFor();

    await page.getByLabel('Kind').selectOption('rabbitmq');
    await page.getByLabel('URL').fill(place.url);
    await page.getByLabel('Exchange (RabbitMQ)').fill('from-the-page');
    await page.getByLabel('Routing key (RabbitMQ)').fill('{event_type}');
    await page.getByLabel('shipment.created').check();
    await page.getByRole('button', { name: 'Add endpoint' }).click();
    await page.getByText('Endpoint added').waitFor();
    const card = await page.locator('main').textContent();
    expect(card).toContain('RabbitMQ');
    expect(card).toContain(`${place.user}:****@127.0.0.1`);
    expect(card).toContain('from-the-page');

    await page.getByRole('button', { name: 'Send a test message' }).click();
    // The test's answer is shown once on its message's page (post, redirect, get).
    await page.getByText('Test message sent').waitFor();
    expect(await page.getByRole('status').textContent()).toContain('confirmed by the broker');
    await expect.poll(() => consumer.received.length).toBe(1);
    expect(consumer.received[0]?.headers['webhook-event']).toBe('shipment.created');
    expect(await page.content()).not.toContain(place.password);

    // The delivery log's attempt says what the broker answered.
    expect(await page.locator('main').textContent()).toContain('confirmed by the broker');
    expect(await page.content()).not.toContain(place.password);
    await page.close();
  });
});
