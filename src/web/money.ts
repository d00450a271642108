import { AppError } from '../lib/errors.ts';

/** How many minor units a currency has (EUR 2, JPY 0, KWD 3), from the runtime's ICU data. */
export function currencyDigits(currency: string): number {
  try {
    return (
      new Intl.NumberFormat('en', { style: 'currency', currency }).resolvedOptions().maximumFractionDigits ??
      2
    );
  } catch {
    return 2;
  }
}

/** An amount in minor units shown as money, e.g. 1250 EUR -> "€12.50". */
export function formatMoney(minor: number, currency: string): string {
  const digits = currencyDigits(currency);
  try {
    return new Intl.NumberFormat('en', { style: 'currency', currency }).format(minor / 10 ** digits);
  } catch {
    return `${(minor / 10 ** digits).toFixed(digits)} ${currency}`;
  }
}

/**
 * Reads an amount typed in major units ("12.5") as whole minor units (1250) for the currency,
 * by string arithmetic so that no binary fraction creeps in. Refuses more decimals than it has.
 */
export function parseMajorAmount(value: string, currency: string, path = '/cod_amount'): number {
  const digits = currencyDigits(currency);
  const match = /^(\d{1,13})(?:[.,](\d+))?$/.exec(value.trim());
  const fraction = match?.[2] ?? '';
  if (!match || fraction.length > digits) {
    const shape = digits === 0 ? 'a whole number' : `a number with at most ${digits} decimals`;
    throw new AppError('validation.failed', `The amount must be ${shape} for ${currency}`, {
      errors: [{ path, message: `must be ${shape}` }],
    });
  }
  return Number(match[1]) * 10 ** digits + Number(fraction.padEnd(digits, '0') || '0');
}
