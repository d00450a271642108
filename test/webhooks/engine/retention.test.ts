import { describe, expect, it } from 'vitest';
import { DAY } from '../../../src/lib/clock.ts';
import { purgeWebhookHistory } from '../../../src/modules/webhooks/retention.ts';
import { createCompany, createShipment } from '../../support/api.ts';
import { deliveriesOf, insertEndpoint, testWorker, useWaybillAndReceiver } from './support.ts';

describe('history retention', () => {
  const env = useWaybillAndReceiver();

  it('removes deliveries and attempts older than 30 days, keeps the rest', async () => {
    const { w, receiver } = env;
    const company = await createCompany(w);
    const endpoint = await insertEndpoint(w, { tenantId: company.tenantId, url: receiver.url });
    const worker = testWorker(w);
    await createShipment(w, company.liveToken);
    await worker.tick();
    w.clock.advance(10 * DAY);
    await createShipment(w, company.liveToken);
    await worker.tick();
    await worker.stop();
    expect(await deliveriesOf(w, endpoint.id)).toHaveLength(2);

    w.clock.advance(20 * DAY);
    expect(await purgeWebhookHistory(w.ctx)).toEqual({ deliveries: 0, attempts: 0 });
    w.clock.advance(1);
    expect(await purgeWebhookHistory(w.ctx)).toEqual({ deliveries: 1, attempts: 1 });
    const left = await deliveriesOf(w, endpoint.id);
    expect(left).toHaveLength(1);
    const attempts = await w.ctx.db.selectFrom('webhook_attempts').select('delivery_id').execute();
    expect(attempts.map((a) => a.delivery_id)).toEqual([left[0]?.id]);
  });
});
