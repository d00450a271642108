// The BROWSER of the client matrix's child-process hosts (mcp-remote, the Inspector CLI). They open
// the authorization URL with the `open` package, whose xdg-open runs `$BROWSER <url>` on a machine
// without a desktop. This is that browser: headless Chromium, with the person the test set up
// (WAYBILL_CONSENT_SESSION, signed in at WAYBILL_CONSENT_BASE_URL) answering as the file
// WAYBILL_CONSENT_DECISION says, and each landing appended to WAYBILL_CONSENT_LOG.
import { appendFileSync, readFileSync } from 'node:fs';
import { launchChromium } from '../support/browser.ts';
import { answerConsent, type Decision } from './consent.ts';

const url = process.argv[2] ?? '';
const env = (name: string) => process.env[name] ?? '';
const browser = await launchChromium();
try {
  const landed = await answerConsent(browser, url, {
    session: env('WAYBILL_CONSENT_SESSION'),
    baseUrl: env('WAYBILL_CONSENT_BASE_URL'),
    decision: readFileSync(env('WAYBILL_CONSENT_DECISION'), 'utf8').trim() as Decision,
  });
  appendFileSync(env('WAYBILL_CONSENT_LOG'), `${JSON.stringify({ url, landed: landed.href })}\n`);
} catch (error) {
  appendFileSync(env('WAYBILL_CONSENT_LOG'), `${JSON.stringify({ url, error: String(error) })}\n`);
  process.exitCode = 1;
} finally {
  await browser.close();
}
