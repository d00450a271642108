/** ISO 4217 active codes, from the runtime's ICU data, so the list stays current with Node. */
const CURRENCIES: ReadonlySet<string> = new Set(Intl.supportedValuesOf('currency'));

export function isCurrency(code: string): boolean {
  return CURRENCIES.has(code);
}
