/**
 * The App Store's fixed list of categories (served by GET /v1/store/categories). A listing names
 * one by its `id`; the labels are what people read, in English and Spanish.
 */
export const CATEGORIES = [
  { id: 'accounting', en: 'Accounting and invoicing', es: 'Contabilidad y facturación' },
  { id: 'analytics', en: 'Analytics and reports', es: 'Analítica e informes' },
  { id: 'customer_service', en: 'Customer service', es: 'Atención al cliente' },
  { id: 'fulfilment', en: 'Fulfilment and warehousing', es: 'Preparación de pedidos y almacenes' },
  { id: 'marketplaces', en: 'Marketplaces and online stores', es: 'Marketplaces y tiendas online' },
  { id: 'notifications', en: 'Notifications and tracking', es: 'Notificaciones y seguimiento' },
  { id: 'shipping', en: 'Shipping and carriers', es: 'Envíos y transportistas' },
  { id: 'productivity', en: 'Productivity and other tools', es: 'Productividad y otras herramientas' },
] as const;

export type CategoryId = (typeof CATEGORIES)[number]['id'];
export const CATEGORY_IDS: readonly string[] = CATEGORIES.map((c) => c.id);

export function isCategory(value: string): value is CategoryId {
  return CATEGORY_IDS.includes(value);
}

export type Lang = 'en' | 'es';

export function categoryLabel(id: string, lang: Lang): string {
  const category = CATEGORIES.find((c) => c.id === id);
  return category ? category[lang] : id;
}
