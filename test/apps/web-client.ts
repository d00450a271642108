import type { TestWaybill } from '../support/harness.ts';

/** A tiny browser for server-rendered pages over real HTTP: keeps cookies, follows nothing by itself. */
export class WebClient {
  readonly #cookies = new Map<string, string>();
  readonly #w: TestWaybill;

  constructor(w: TestWaybill) {
    this.#w = w;
  }

  async request(method: 'GET' | 'POST', path: string, form?: Record<string, string | string[]>) {
    const headers: Record<string, string> = {};
    if (this.#cookies.size > 0) headers.cookie = [...this.#cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    let body: string | undefined;
    if (form) {
      const params = new URLSearchParams();
      for (const [key, value] of Object.entries(form)) {
        for (const item of Array.isArray(value) ? value : [value]) params.append(key, item);
      }
      body = params.toString();
      headers['content-type'] = 'application/x-www-form-urlencoded';
    }
    const response = await fetch(new URL(path, this.#w.url), { method, headers, body, redirect: 'manual' });
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const eq = pair?.indexOf('=') ?? -1;
      if (pair && eq > 0) this.#cookies.set(pair.slice(0, eq), pair.slice(eq + 1));
    }
    return {
      status: response.status,
      location: response.headers.get('location'),
      headers: response.headers,
      text: await response.text(),
    };
  }

  get(path: string) {
    return this.request('GET', path);
  }

  /** Posts a form with the CSRF token of the page it came from. */
  post(path: string, page: string, form: Record<string, string | string[]> = {}) {
    return this.request('POST', path, { _csrf: csrfOf(page), ...form });
  }

  async signIn(email: string, password: string) {
    const page = await this.get('/signin');
    const response = await this.post('/signin', page.text, { email, password, return_to: '/developer/apps' });
    if (response.status !== 303) throw new Error(`sign-in failed: ${response.status} ${response.text}`);
  }
}

export function csrfOf(page: string): string {
  const match = /name="_csrf" value="([^"]+)"/.exec(page);
  if (!match?.[1]) throw new Error('no CSRF token on the page');
  return match[1];
}

/** The value of a readonly copy field, by its name. */
export function fieldValue(page: string, name: string): string | null {
  const match = new RegExp(`name="${name}" value="([^"]*)"`).exec(page);
  return match?.[1]?.replaceAll('&amp;', '&').replaceAll('&#39;', "'").replaceAll('&quot;', '"') ?? null;
}
