import type { AppError } from '../lib/errors.ts';
import { html, type SafeHtml } from './html.ts';

/** A form field's error in words, shown beside the field (and named by it for screen readers). */
export interface FieldError {
  field: string;
  message: string;
}

/** A form's fields as typed, kept by the flash across the redirect after a refusal (decision 0083). */
export type TypedForm = Record<string, string | string[]>;

/** What the form page shows again after a refused POST: the fields as typed and their errors. */
export interface FormRetry {
  /** The page the refusal redirected to; another page leaves it alone. */
  path: string;
  values: TypedForm;
  errors: FieldError[];
}

/** The validation error's default words, which name no field. */
const GENERIC = 'The request is not valid';

/** Never kept for another showing: the CSRF token, the second question's answer, passwords. */
const NOT_KEPT = new Set(['_csrf', 'confirmed', 'password']);

export function typedForm(form: Record<string, string | string[] | undefined>): TypedForm {
  const kept: TypedForm = {};
  for (const [name, value] of Object.entries(form))
    if (value !== undefined && !NOT_KEPT.has(name)) kept[name] = value;
  return kept;
}

/**
 * The fields an AppError names (its `errors` paths, "/branding/accent_color" → accent_color), each
 * with words a person reads: the form's own words for the error's code or field, else the label
 * and the service's short message. `fieldOf` maps an API path's last name to a form field's.
 */
export function fieldErrorsOf(
  error: AppError,
  words: {
    labels?: Partial<Record<string, string>>;
    byCode?: Partial<Record<string, string>>;
    fieldOf?: Partial<Record<string, string>>;
  } = {},
): FieldError[] {
  const listed = Array.isArray(error.extra.errors)
    ? (error.extra.errors as Array<{ path?: unknown; message?: unknown }>)
    : [];
  const errors: FieldError[] = [];
  for (const item of listed) {
    if (typeof item.path !== 'string') continue;
    const name = item.path
      .split('/')
      .filter((part) => part !== '' && !/^\d+$/.test(part))
      .pop();
    if (!name) continue;
    const field = words.fieldOf?.[name] ?? name;
    if (errors.some((e) => e.field === field)) continue;
    const label = words.labels?.[field];
    // One field refused with a sentence of its own ("Name is required") reads best as it is.
    const own = listed.length === 1 && error.message !== GENERIC;
    // A service's sentence names the API's field ("carrier_code must be…"): the label instead.
    const sentence = label
      ? error.message.replace(new RegExp(`^(${name}|${field})\\b`), label)
      : error.message;
    const message =
      words.byCode?.[error.code] ??
      (label && !own ? `${label}: ${String(item.message ?? error.message)}` : sentence);
    errors.push({ field, message });
  }
  return errors;
}

/** The attributes of a control whose last try failed: aria-invalid, and its error as description. */
export function invalidAttrs(errors: readonly FieldError[] | null | undefined, field: string): SafeHtml | '' {
  return errors?.some((e) => e.field === field)
    ? html` aria-invalid="true" aria-describedby="error-${field}"`
    : '';
}

/** The error beside a field, with the id its control points to. */
export function fieldMessage(errors: readonly FieldError[] | null | undefined, field: string): SafeHtml | '' {
  const error = errors?.find((e) => e.field === field);
  return error ? html`<span class="field-error" id="error-${field}">${error.message}</span>` : '';
}

/** One typed value (the first of a repeated field), or ''. */
export function typedValue(
  form: Record<string, string | string[] | undefined> | null | undefined,
  name: string,
) {
  const value = form?.[name];
  return (Array.isArray(value) ? value[0] : value) ?? '';
}
