import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import openapiTS, { astToString } from 'openapi-typescript';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, createCompany, type Json } from './support/api.ts';
import { engine, startWaybill, type TestWaybill } from './support/harness.ts';
import { messageProblems } from './support/message-check.ts';

/**
 * What a receiver's developer does with the document: generate types with openapi-typescript
 * from /openapi.json, then type their handler with them. Each event type must yield a type that
 * accepts its example and refuses what the schema does not allow, checked by the TypeScript
 * compiler over a small file written as a receiver would.
 */

let w: TestWaybill;
let folder: string;
beforeAll(async () => {
  w = await startWaybill();
  folder = mkdtempSync(join(tmpdir(), 'waybill-types-'));
});
afterAll(async () => {
  rmSync(folder, { recursive: true, force: true });
  await w?.close();
});

/** A schema with every `$ref` replaced by what it points to in `root` (the schemas have no cycles). */
function dereferenced(schema: unknown, root: Json): unknown {
  if (Array.isArray(schema)) return schema.map((item) => dereferenced(item, root));
  if (schema === null || typeof schema !== 'object') return schema;
  const { $ref, $id: _id, $schema: _dialect, $defs: _defs, ...rest } = schema as Json;
  if (typeof $ref === 'string') {
    const target = $ref
      .slice(2)
      .split('/')
      .reduce((node: Json, key: string) => node[key], root);
    return dereferenced(target, root);
  }
  return Object.fromEntries(Object.entries(rest).map(([key, value]) => [key, dereferenced(value, root)]));
}

describe.skipIf(engine !== 'pglite')('the webhooks of /openapi.json', () => {
  it('has one entry per event type whose request body is the type’s published schema', async () => {
    const company = await createCompany(w);
    // Each version's document beside its catalogue; without the parameter, the latest (decision 0081).
    for (const version of ['2026-11-01', '2026-12-01', null]) {
      const query = version ? `?api_version=${version}` : '';
      const document = (await (await fetch(`${w.url}/openapi.json${query}`)).json()) as Json;
      const catalogue = (
        await call(w, 'GET', `/v1/webhook-event-types${query}`, { token: company.liveToken })
      ).body.data;
      expect(Object.keys(document.webhooks), query).toEqual(catalogue.map((entry: Json) => entry.type));
      for (const { type, schema } of catalogue) {
        const content = document.webhooks[type].post.requestBody.content['application/json'];
        expect(dereferenced(content.schema, document), type).toEqual(dereferenced(schema, schema));
        expect(messageProblems({ body: JSON.stringify(content.example) }), type).toEqual([]);
      }
    }
    const document = (await (await fetch(`${w.url}/openapi.json?api_version=2026-11-01`)).json()) as Json;
    // GET /v1/shipments/{id} answers the latest shape: 2026-11-01's data.shipment (the document of
    // that version names it), the tracking fields and tracking_url (issue 52: REST only, in no message).
    const answer = document.paths['/v1/shipments/{id}'].get.responses['200'].content['application/json'];
    expect(answer.schema).toEqual({ $ref: '#/components/schemas/ShipmentResource' });
    expect(document.components.schemas.ShipmentEventData.properties.shipment).toEqual({
      $ref: '#/components/schemas/Shipment',
    });
    const { tracking_url, ...tracked } = document.components.schemas.ShipmentResource.properties;
    expect(tracking_url.type).toBe('string');
    expect(tracked).toEqual(document.components.schemas.TrackedShipment.properties);
    for (const [name, field] of Object.entries(document.components.schemas.Shipment.properties))
      expect(tracked[name], name).toEqual(field);
  });
});

/** One check per event type, with the two mistakes the generated type must refuse. */
function checksOf(type: string, example: Json, index: number): string {
  const literal = JSON.stringify(example);
  const extra = JSON.stringify({ ...example, unknown_field: 1 });
  const { api_version: _dropped, ...missing } = example;
  return `
export const example${index}: Body<${JSON.stringify(type)}> = ${literal};
// @ts-expect-error a field the schema does not have
export const extra${index}: Body<${JSON.stringify(type)}> = ${extra};
// @ts-expect-error without a required field
export const missing${index}: Body<${JSON.stringify(type)}> = ${JSON.stringify(missing)};
// @ts-expect-error another type's name
export const other${index}: Body<${JSON.stringify(type)}>['type'] = 'not.this.type';
`;
}

describe.skipIf(engine !== 'pglite')('types generated from /openapi.json', () => {
  it('give a receiver one type per event type, each its message body exactly', {
    timeout: 120_000,
  }, async () => {
    const document = (await (await fetch(`${w.url}/openapi.json`)).json()) as Json;
    const company = await createCompany(w);
    // The document and the catalogue both answer the latest version unless asked.
    const catalogue = await call(w, 'GET', '/v1/webhook-event-types', {
      token: company.liveToken,
    });
    const types: string[] = catalogue.body.data.map((entry: Json) => entry.type);
    expect(Object.keys(document.webhooks)).toEqual(types);

    writeFileSync(join(folder, 'waybill.ts'), astToString(await openapiTS(document, { silent: true })));
    const examples = types.map(
      (type) => document.webhooks[type].post.requestBody.content['application/json'].example,
    );
    writeFileSync(
      join(folder, 'receiver.ts'),
      `import type { webhooks } from './waybill';

type Body<T extends keyof webhooks> = webhooks[T]['post']['requestBody']['content']['application/json'];
/** Every message Waybill sends: a union told apart by its type. */
export type WaybillEvent = Body<keyof webhooks>;

export function typeOf(event: WaybillEvent): string {
  switch (event.type) {
${types.map((type) => `    case ${JSON.stringify(type)}: return typeof event.data;`).join('\n')}
    default: {
      const unknown: never = event;
      return unknown;
    }
  }
}

export const tracking = (event: Body<'shipment.delivered'>): string => event.data.shipment.tracking_number;
export const installation = (event: Body<'customer.redact'>): string => event.data.installation_id;
${types.map((type, i) => checksOf(type, examples[i], i)).join('')}`,
    );
    const program = ts.createProgram([join(folder, 'receiver.ts')], {
      strict: true,
      noEmit: true,
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.ESNext,
      moduleResolution: ts.ModuleResolutionKind.Bundler,
      skipLibCheck: true,
      types: [],
    });
    const problems = ts
      .getPreEmitDiagnostics(program)
      .map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
    expect(problems).toEqual([]);
  });
});
