import { afterAll, afterEach } from 'vitest';
import { takeInvalidMessages } from './message-check.ts';

// Run before every test file (vitest.config.ts, setupFiles): a message that is not valid against
// its published schema fails the test that was running when a receiver got it, or the file when
// it arrived after its last test.
function failOnInvalidMessages(): void {
  const invalid = takeInvalidMessages();
  if (invalid.length > 0) throw new Error(invalid.join('\n\n'));
}

afterEach(failOnInvalidMessages);
afterAll(failOnInvalidMessages);
