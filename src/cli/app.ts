/**
 * `waybill login` and `waybill app deploy | versions | release`: an app's configuration as code
 * (CONTRACT.md "Apps as code"). The manifest is read from `waybill.app.toml` with a real TOML
 * parser (smol-toml, decision 0052), sent to the developer API, and every refusal is printed with
 * the path of the key in the file that caused it.
 */
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { parse as parseToml, TomlError } from 'smol-toml';
import { request } from 'undici';
import { canonicalJson } from '../lib/canonical-json.ts';
import { apiAddressProblem } from './api-address.ts';

export const LOGIN_USAGE = `Usage: waybill login [--api <url>]

Asks for your e-mail and password, signs in and keeps the session token in
~/.config/waybill/credentials.json (mode 0600) for the app commands, with the address it was made
for: the app commands send it to that origin only. Plain http:// only to this machine
(localhost, 127.0.0.1, ::1).`;

export const APP_USAGE = `Usage: waybill app <command> [--api <url>]

Commands:
  deploy [--config waybill.app.toml] [--release] [--message <text>]
                     send the manifest as a new version; prints the changes and its number;
                     --release makes it active at once
  versions           the app's versions, newest first
  release <number>   make that version active (an older one rolls back)

The file names the app with app_id = "app_..." (or --app <id>). The credential is WAYBILL_TOKEN
(a person's session token) or what \`waybill login\` stored; --api defaults to the address
\`waybill login\` used, or http://localhost:3000. The stored session goes to the origin it was
made for only (another --api: sign in there with \`waybill login --api <url>\`); plain http://
only to this machine.`;

const DEFAULT_API = 'http://localhost:3000';
const DEFAULT_CONFIG = 'waybill.app.toml';

/** A failure the command explains in its output; exit 1 (2 for usage). */
export class CommandError extends Error {
  readonly exitCode: number;

  constructor(message: string, exitCode = 1) {
    super(message);
    this.exitCode = exitCode;
  }
}

interface Credentials {
  api: string;
  token: string;
}

function credentialsPath(): string {
  const base = process.env.XDG_CONFIG_HOME || join(homedir(), '.config');
  return join(base, 'waybill', 'credentials.json');
}

function storedCredentials(): Partial<Credentials> {
  try {
    const value = JSON.parse(readFileSync(credentialsPath(), 'utf8')) as Partial<Credentials>;
    return typeof value === 'object' && value ? value : {};
  } catch {
    return {};
  }
}

/** The API's address, refused when a credential sent there would cross the network in plain http. */
function apiOf(option: string | undefined, stored: Partial<Credentials>): string {
  const [given, source] =
    option !== undefined
      ? [option, '--api']
      : process.env.WAYBILL_API_URL
        ? [process.env.WAYBILL_API_URL, 'WAYBILL_API_URL']
        : [stored.api ?? DEFAULT_API, 'the API address'];
  const api = given.replace(/\/+$/, '');
  const problem = apiAddressProblem(api, source);
  if (problem) throw new CommandError(problem, 2);
  return api;
}

function originOf(api: unknown): string | null {
  return typeof api === 'string' && URL.canParse(api) ? new URL(api).origin : null;
}

interface Answer {
  status: number;
  // biome-ignore lint/suspicious/noExplicitAny: answers are read loosely and printed.
  body: any;
}

async function callApi(api: string, token: string | null, method: string, path: string, body?: unknown) {
  let response: Awaited<ReturnType<typeof request>>;
  try {
    response = await request(`${api}${path}`, {
      method: method as 'POST',
      headers: {
        ...(token ? { authorization: `Bearer ${token}` } : {}),
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  } catch (error) {
    throw new CommandError(`Cannot reach ${api}: ${(error as Error).message}`);
  }
  const text = await response.body.text();
  let parsed: unknown = null;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    parsed = { detail: text.slice(0, 200) };
  }
  return { status: response.statusCode, body: parsed } as Answer;
}

/** Reads lines from stdin; the password is not echoed on a terminal. */
async function ask(questions: Array<{ prompt: string; secret?: boolean }>): Promise<string[]> {
  const input = process.stdin;
  const rl = createInterface({ input, output: process.stdout, terminal: input.isTTY === true });
  const answers: string[] = [];
  const lines = rl[Symbol.asyncIterator]();
  try {
    for (const question of questions) {
      process.stdout.write(question.prompt);
      const writeOutput = (rl as unknown as { _writeToOutput?: (s: string) => void })._writeToOutput;
      if (question.secret && input.isTTY) {
        (rl as unknown as { _writeToOutput: (s: string) => void })._writeToOutput = () => {};
      }
      const next = await lines.next();
      if (writeOutput) (rl as unknown as { _writeToOutput: typeof writeOutput })._writeToOutput = writeOutput;
      if (question.secret && input.isTTY) process.stdout.write('\n');
      if (next.done) throw new CommandError('No answer: the input ended', 1);
      answers.push(String(next.value).trim());
    }
  } finally {
    rl.close();
  }
  return answers;
}

export async function loginCommand(args: string[]): Promise<void> {
  const { values } = parseArgs({ args, options: { api: { type: 'string' }, help: { type: 'boolean' } } });
  if (values.help) {
    console.log(LOGIN_USAGE);
    return;
  }
  const api = apiOf(values.api, storedCredentials());
  const [email, password] = await ask([{ prompt: 'E-mail: ' }, { prompt: 'Password: ', secret: true }]);
  const answer = await callApi(api, null, 'POST', '/v1/auth/sessions', { email, password });
  if (answer.status !== 201 || typeof answer.body?.token !== 'string') {
    throw new CommandError(`Sign-in refused: ${problemText(answer)}`);
  }
  const path = credentialsPath();
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  // mode applies only to a folder made now: one that was there is tightened too.
  chmodSync(dirname(path), 0o700);
  writeFileSync(path, `${JSON.stringify({ api, token: answer.body.token }, null, 2)}\n`, { mode: 0o600 });
  chmodSync(path, 0o600);
  console.log(
    `Signed in to ${api} as ${answer.body.user?.email ?? email}; the session lasts until ${answer.body.expires_at}`,
  );
  console.log(`Credentials kept in ${path}`);
}

function problemText(answer: Answer): string {
  const body = answer.body ?? {};
  return `${answer.status} ${body.code ?? ''}${body.detail ? `: ${body.detail}` : ''}`.trim();
}

/** `/manifest/subscriptions/0/filter/data.shipment.status/eq` → `subscriptions[0].filter."data.shipment.status".eq` */
export function tomlPath(pointer: string): string {
  const segments = pointer
    .replace(/^\/manifest\/?/, '')
    .split('/')
    .filter((s) => s !== '')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
  let out = '';
  for (const segment of segments) {
    if (/^\d+$/.test(segment)) out += `[${segment}]`;
    else if (/^[A-Za-z0-9_-]+$/.test(segment)) out += out ? `.${segment}` : segment;
    else out += `${out ? '.' : ''}${JSON.stringify(segment)}`;
  }
  return out || '(the file)';
}

interface Loaded {
  appId: string;
  manifest: Record<string, unknown>;
}

function loadManifest(file: string, appOption: string | undefined): Loaded {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new CommandError(
      `Cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
    );
  }
  let parsed: Record<string, unknown>;
  try {
    parsed = parseToml(text) as Record<string, unknown>;
  } catch (error) {
    if (error instanceof TomlError) {
      const first = error.message.split('\n')[0];
      throw new CommandError(`${file}:${error.line}:${error.column}: ${first}`);
    }
    throw error;
  }
  const { app_id: fileAppId, ...manifest } = parsed;
  const appId = appOption ?? (typeof fileAppId === 'string' ? fileAppId : undefined);
  if (!appId) throw new CommandError(`${file}: app_id: name the app (app_id = "app_...") or pass --app`, 2);
  checkAppId(appId, appOption ? '--app' : `${file}: app_id`);
  // TOML has dates; the manifest has ISO 8601 text (JSON.stringify writes them so).
  return { appId, manifest: JSON.parse(JSON.stringify(manifest)) as Record<string, unknown> };
}

/**
 * An app id is `app_` and letters or digits: a manifest is a file anyone may hand over, and an id
 * such as `../../companies/x` must never steer an authenticated request to another path.
 */
const APP_ID = /^app_[A-Za-z0-9]{1,64}$/;

function checkAppId(appId: string, where: string): string {
  if (!APP_ID.test(appId))
    throw new CommandError(`${where}: "${appId.slice(0, 80)}" is not an app id (app_...)`, 2);
  return appId;
}

/** A path under /v1/developer/apps/{id}, every part encoded. */
function appPath(appId: string, ...parts: string[]): string {
  return ['/v1/developer/apps', checkAppId(appId, 'app id'), ...parts]
    .map((p, i) => (i === 0 ? p : encodeURIComponent(p)))
    .join('/');
}

function formatValue(value: unknown): string {
  const text = JSON.stringify(value ?? null);
  return text.length > 100 ? `${text.slice(0, 97)}...` : text;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** One line per changed key; a subscription (an object) is shown key by key. */
function changeLines(key: string, from: unknown, to: unknown, expand = true): string[] {
  if (expand && (isRecord(from) || from === null) && (isRecord(to) || to === null) && (from || to)) {
    const keys = [...new Set([...Object.keys(from ?? {}), ...Object.keys(to ?? {})])];
    return keys.flatMap((k) => {
      const a = from?.[k] ?? null;
      const b = to?.[k] ?? null;
      return canonicalJson(a) === canonicalJson(b) ? [] : changeLines(`${key}.${k}`, a, b, false);
    });
  }
  if (from === null) return [`  + ${key} = ${formatValue(to)}`];
  if (to === null) return [`  - ${key} (was ${formatValue(from)})`];
  return [`  ~ ${key}: ${formatValue(from)} -> ${formatValue(to)}`];
}

function printVersion(version: Answer['body'], verb: string): void {
  console.log(`${verb} version ${version.number} (${version.id}), ${version.status}`);
  const changes = (version.changes ?? []) as Array<{ path: string; from: unknown; to: unknown }>;
  if (changes.length === 0) console.log('  no changes from the active version');
  for (const change of changes) {
    for (const line of changeLines(tomlPath(change.path), change.from, change.to)) console.log(line);
  }
}

function refusal(file: string | null, answer: Answer): CommandError {
  const body = answer.body ?? {};
  const lines = [`Refused: ${problemText(answer)}`];
  for (const error of (body.errors ?? []) as Array<{ path: string; message: string }>) {
    const where = error.path.startsWith('/manifest') ? tomlPath(error.path) : error.path;
    lines.push(`  ${file ? `${file}: ` : ''}${where}: ${error.message}`);
  }
  return new CommandError(lines.join('\n'));
}

/**
 * The token and where it goes. Each credential is bound to one origin and sent nowhere else,
 * whatever --api names: WAYBILL_TOKEN to WAYBILL_API_URL's (the two are set together, as GH_TOKEN
 * is for one host; finding I5), the stored session to the one `waybill login` made it for (issue 39
 * item 7).
 */
function credentialsFor(values: { api?: string | undefined }): Credentials {
  const stored = storedCredentials();
  if (process.env.WAYBILL_TOKEN) {
    const api = apiOf(values.api, { api: DEFAULT_API });
    const boundTo = originOf(apiOf(undefined, { api: DEFAULT_API }));
    if (boundTo !== originOf(api)) {
      throw new CommandError(
        `WAYBILL_TOKEN is for ${boundTo} (WAYBILL_API_URL), not ${originOf(api)}, and is sent nowhere else.\nTo use it there, set WAYBILL_API_URL=${api}`,
        1,
      );
    }
    return { api, token: process.env.WAYBILL_TOKEN };
  }
  const api = apiOf(values.api, stored);
  if (!stored.token) throw new CommandError('Not signed in: run `waybill login`, or set WAYBILL_TOKEN', 1);
  const madeFor = originOf(stored.api);
  if (madeFor === null || madeFor !== originOf(api)) {
    throw new CommandError(
      `The stored session was made for ${madeFor ?? 'another address'}, not ${originOf(api)}, and is sent nowhere else.\nSign in there with: waybill login --api ${api}`,
      1,
    );
  }
  return { api, token: stored.token };
}

async function versionsOf(credentials: Credentials, appId: string): Promise<Answer['body'][]> {
  const all: Answer['body'][] = [];
  let cursor: string | null = null;
  do {
    const query: string = `?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
    const answer = await callApi(
      credentials.api,
      credentials.token,
      'GET',
      `${appPath(appId, 'versions')}${query}`,
    );
    if (answer.status !== 200) throw refusal(null, answer);
    all.push(...answer.body.data);
    cursor = answer.body.next_cursor;
  } while (cursor);
  return all;
}

export async function appCommand(args: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      api: { type: 'string' },
      config: { type: 'string' },
      app: { type: 'string' },
      release: { type: 'boolean', default: false },
      message: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  const [command, ...rest] = positionals;
  if (values.help || !command) {
    console.log(APP_USAGE);
    if (!command && !values.help) process.exitCode = 2;
    return;
  }
  const file = values.config ?? DEFAULT_CONFIG;
  switch (command) {
    case 'deploy': {
      const { appId, manifest } = loadManifest(file, values.app);
      const credentials = credentialsFor(values);
      const created = await callApi(credentials.api, credentials.token, 'POST', appPath(appId, 'versions'), {
        manifest,
        ...(values.message ? { message: values.message } : {}),
      });
      if (created.status !== 201) throw refusal(file, created);
      printVersion(created.body, 'Created');
      if (values.release) await release(credentials, appId, created.body);
      else console.log(`Release it with: waybill app release ${created.body.number}`);
      return;
    }
    case 'versions': {
      const credentials = credentialsFor(values);
      const appId = values.app ? checkAppId(values.app, '--app') : loadManifest(file, undefined).appId;
      for (const version of await versionsOf(credentials, appId)) {
        const changes = (version.changes ?? []).length;
        console.log(
          `${String(version.number).padStart(4)}  ${version.status.padEnd(10)}  ${version.created_at}  ${changes} change${changes === 1 ? '' : 's'}${version.message ? `  ${version.message}` : ''}`,
        );
      }
      return;
    }
    case 'release': {
      const number = rest[0];
      if (!number || !/^\d+$/.test(number)) throw new CommandError('Usage: waybill app release <number>', 2);
      const credentials = credentialsFor(values);
      const appId = values.app ? checkAppId(values.app, '--app') : loadManifest(file, undefined).appId;
      const version = (await versionsOf(credentials, appId)).find((v) => v.number === Number(number));
      if (!version) throw new CommandError(`The app has no version ${number}`);
      await release(credentials, appId, version);
      return;
    }
    default:
      throw new CommandError(`Unknown command "app ${command}"\n\n${APP_USAGE}`, 2);
  }
}

async function release(credentials: Credentials, appId: string, version: Answer['body']): Promise<void> {
  const answer = await callApi(
    credentials.api,
    credentials.token,
    'POST',
    appPath(appId, 'versions', String(version.id), 'release'),
  );
  if (answer.status !== 200) {
    const problem = refusal(null, answer);
    if (answer.body?.code === 'app.published_requires_review') {
      problem.message += `\n  Submit it for review with version_id ${version.id}; approval releases it.`;
    }
    throw problem;
  }
  console.log(`Released version ${answer.body.number}: it is active`);
}

/** Runs a client command: its errors are lines on stderr and an exit code, never a stack. */
export async function runClientCommand(run: () => Promise<void>): Promise<void> {
  try {
    await run();
  } catch (error) {
    if (error instanceof CommandError) {
      console.error(error.message);
      process.exitCode = error.exitCode;
      return;
    }
    if (error instanceof TypeError && (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      console.error(error.message);
      process.exitCode = 2;
      return;
    }
    throw error;
  }
}
