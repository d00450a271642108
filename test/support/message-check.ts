import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsImport from 'ajv-formats';
import type { Kysely } from 'kysely';
import type { Database } from '../../src/db/schema.ts';
import { API_VERSIONS } from '../../src/modules/shipments/events.ts';
import { listEventTypes } from '../../src/modules/webhooks/event-types.ts';

/**
 * Every message Waybill sends in the test suite is checked here against the published event
 * catalogue (the schemas GET /v1/webhook-event-types answers with), as a receiver that generated
 * its types from them would: Ajv in strict mode with draft 2020-12 and formats. Every receiver in
 * test/ hands what it gets to checkReceived; test/support/message-check-setup.ts checks them after
 * each test and fails the test that was running when an invalid message arrived.
 */

// ajv-formats is CommonJS with a default export.
const addFormats = addFormatsImport as unknown as (ajv: Ajv2020) => Ajv2020;

export interface MessageLike {
  headers?: Record<string, string | string[] | undefined>;
  body: string;
}

let validators: Map<string, ValidateFunction> | undefined;

/** The published catalogue, compiled once per test file. */
export function catalogueValidators(): Map<string, ValidateFunction> {
  if (!validators) {
    const ajv = new Ajv2020({ strict: true, allErrors: true });
    addFormats(ajv);
    // Each version's schemas, by version and type: a message is checked against its own version's.
    validators = new Map();
    for (const apiVersion of API_VERSIONS) {
      const { data } = listEventTypes({
        tenantId: '00000000-0000-4000-8000-000000000000',
        livemode: true,
        at: new Date(0),
        apiVersion,
      });
      for (const entry of data) validators.set(`${apiVersion}:${entry.type}`, ajv.compile(entry.schema));
    }
  }
  return validators;
}

/** What is wrong with a message: nothing (an empty list) when it is valid against its type's schema. */
export function messageProblems(message: MessageLike): string[] {
  let body: { type?: unknown; id?: unknown; api_version?: unknown };
  try {
    body = JSON.parse(message.body);
  } catch {
    return ['the body is not JSON'];
  }
  const validate = catalogueValidators().get(`${String(body?.api_version)}:${String(body?.type)}`);
  if (!validate)
    return [
      `${JSON.stringify(body?.type)} is not an event type of the catalogue of ${JSON.stringify(body?.api_version)}`,
    ];
  const problems = validate(body)
    ? []
    : (validate.errors ?? []).map(
        (error) => `${error.instancePath || '/'} ${error.message} ${JSON.stringify(error.params)}`,
      );
  const header = (name: string) => message.headers?.[name];
  if (message.headers && header('webhook-id') !== body.id) problems.push('webhook-id is not the body’s id');
  if (message.headers && header('webhook-event') !== body.type) {
    problems.push('webhook-event is not the body’s type');
  }
  return problems;
}

const received: Array<{ message: MessageLike; where: string }> = [];

/**
 * Every receiver in test/ calls this with each message it gets. The check itself waits for
 * takeInvalidMessages (after each test): compiling the schemas takes a good part of a second, which
 * must not hold up a receiver's answer in a test that times them.
 */
export function checkReceived(message: MessageLike, where: string): void {
  received.push({ message, where });
}

/** The messages received since the last call that are not valid against their schemas. */
export function takeInvalidMessages(): string[] {
  return received.splice(0).flatMap(({ message, where }) => {
    const problems = messageProblems(message);
    if (problems.length === 0) return [];
    return [
      `${where} got a message that is not valid against its schema:\n  ${problems.join('\n  ')}\n  ${message.body.slice(0, 2000)}`,
    ];
  });
}

/**
 * The messages a Waybill built, received or not: every event's envelope and every delivery's own
 * (app events, test messages). Checked when a test Waybill closes (harness.ts).
 */
export async function storedMessageProblems(db: Kysely<Database>): Promise<string[]> {
  const events = await db.selectFrom('events').select(['id', 'payload']).execute();
  const deliveries = await db
    .selectFrom('webhook_deliveries')
    .select(['id', 'payload'])
    .where('payload', 'is not', null)
    .execute();
  return [...events, ...deliveries].flatMap(({ id, payload }) =>
    messageProblems({ body: payload ?? '' }).map((problem) => `${id}: ${problem}`),
  );
}
