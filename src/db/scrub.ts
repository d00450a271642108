/**
 * What a failed statement's error may carry of the values it was given, removed before anyone
 * logs it (issue 22 item 1: no personal data in logs). PGlite hangs the statement's bound
 * parameters on its errors (`params`, and `queryOptions`); both engines put the failing row or
 * key in `detail` ("Failing row contains (...)", "Key (...)=(...) already exists"), and a value
 * that does not parse at the end of `message` (`invalid input syntax for type ...: "value"`).
 * The statement's text stays (its values are parameters), and so do the code, the constraint,
 * the table and the column, which say what failed.
 */
export function scrubDatabaseError(error: unknown): unknown {
  if (error === null || typeof error !== 'object') return error;
  const fields = error as Record<string, unknown>;
  for (const name of ['params', 'queryOptions', 'parameters', 'values']) {
    if (name in fields) delete fields[name];
  }
  if (typeof fields.detail === 'string' && fields.detail !== '') fields.detail = '[values not logged]';
  if (error instanceof Error && /: ".*"$/s.test(error.message)) {
    const message = error.message.replace(/: ".*"$/s, ': [value not logged]');
    if (typeof error.stack === 'string') error.stack = error.stack.replace(error.message, message);
    error.message = message;
  }
  return error;
}
