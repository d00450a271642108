import type { Browser } from 'playwright-core';

export type Decision = 'approve' | 'deny';

/**
 * The person at Waybill's consent page: signed in (the session cookie), approves with what the page
 * preselects (test mode, the scopes asked for) or denies. Answers where the browser landed: the
 * host's loopback callback with `code` or `error`.
 */
export async function answerConsent(
  browser: Browser,
  authorizationUrl: string,
  person: { session: string; baseUrl: string; decision: Decision },
): Promise<URL> {
  const context = await browser.newContext();
  try {
    await context.addCookies([{ name: 'waybill_session', value: person.session, url: person.baseUrl }]);
    const page = await context.newPage();
    await page.goto(authorizationUrl);
    const button = page.getByRole('button', { name: person.decision === 'approve' ? 'Approve' : 'Deny' });
    if ((await button.count()) === 0) {
      throw new Error(
        `no consent form at ${page.url()}: ${((await page.locator('body').textContent()) ?? '').slice(0, 500)}`,
      );
    }
    await button.click();
    await page.waitForURL((url) => url.origin !== new URL(person.baseUrl).origin);
    return new URL(page.url());
  } finally {
    await context.close();
  }
}
