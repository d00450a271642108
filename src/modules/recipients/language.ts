import { SUB_STATUSES, type SubStatusCode } from '../tracking/catalogue.ts';
import type { Milestone } from './milestones.ts';

/** The languages of the tracking page and the recipient's e-mail (issue 52). */
export const LANGUAGES = ['en', 'es'] as const;
export type Language = (typeof LANGUAGES)[number];

/**
 * The best of English and Spanish for an Accept-Language header (RFC 9110 12.5.4): the listed
 * ranges by weight, a region ignored (`es-MX` is Spanish); English when neither is asked for.
 */
export function pickLanguage(header: string | undefined): Language {
  if (!header) return 'en';
  const ranges = header
    .split(',')
    .map((part, index) => {
      const [range = '', ...params] = part.trim().split(';');
      const q = params.map((p) => /^\s*q=([0-9.]+)\s*$/.exec(p)?.[1]).find((v) => v !== undefined);
      return { tag: range.trim().toLowerCase().split('-')[0] ?? '', weight: q ? Number(q) : 1, index };
    })
    .filter((range) => range.weight > 0)
    .sort((a, b) => b.weight - a.weight || a.index - b.index);
  for (const range of ranges) {
    if ((LANGUAGES as readonly string[]).includes(range.tag)) return range.tag as Language;
  }
  return 'en';
}

type Words = {
  statuses: Record<string, string>;
  /** The sub-status catalogue in words (English: its published descriptions). */
  subStatuses: Record<SubStatusCode, string>;
  exceptionReasons: Record<string, string>;
  milestones: Record<Milestone, { subject: string; line: string }>;
  pageTitle: string;
  timeline: string;
  noEvents: string;
  deliveredBy: string;
  estimate: string;
  help: string;
  poweredBy: string;
  notFoundTitle: string;
  notFoundBody: string;
  trackLink: string;
  unsubscribe: string;
  unsubscribedTitle: string;
  unsubscribedBody: string;
  unsubscribeConfirm: string;
  unsubscribeButton: string;
};

export const WORDS: Record<Language, Words> = {
  en: {
    statuses: {
      draft: 'Being prepared',
      confirmed: 'Ready to ship',
      picked_up: 'Picked up',
      in_transit: 'On its way',
      out_for_delivery: 'Out for delivery',
      delivered: 'Delivered',
      exception: 'There is a problem with the delivery',
      returned: 'Returned to the sender',
      cancelled: 'Cancelled',
    },
    subStatuses: Object.fromEntries(
      SUB_STATUSES.map(([code, , description]) => [code, description]),
    ) as Record<SubStatusCode, string>,
    exceptionReasons: {
      lost: 'The parcel is lost',
      damaged: 'The parcel is damaged',
      held: 'The parcel is held',
    },
    milestones: {
      picked_up: { subject: 'Your parcel has been picked up', line: 'Your parcel has been picked up.' },
      out_for_delivery: {
        subject: 'Your parcel is out for delivery',
        line: 'Your parcel is out for delivery today.',
      },
      delivered: { subject: 'Your parcel has been delivered', line: 'Your parcel has been delivered.' },
      exception: {
        subject: 'There is a problem with your parcel',
        line: 'There is a problem with the delivery of your parcel.',
      },
      delayed: { subject: 'Your parcel is delayed', line: 'Your parcel will arrive later than expected.' },
    },
    pageTitle: 'Track your parcel',
    timeline: 'History',
    noEvents: 'Nothing has happened yet.',
    deliveredBy: 'Received by',
    estimate: 'Expected',
    help: 'Need help?',
    poweredBy: 'Tracking by Waybill',
    notFoundTitle: 'Not found',
    notFoundBody: 'There is nothing at this address.',
    trackLink: 'Follow your parcel',
    unsubscribe: 'Stop these e-mails',
    unsubscribedTitle: 'You will get no more e-mails',
    unsubscribedBody: 'You will get no more e-mails about parcels from this sender.',
    unsubscribeConfirm: 'Stop e-mails about parcels from this sender?',
    unsubscribeButton: 'Stop e-mails',
  },
  es: {
    statuses: {
      draft: 'En preparación',
      confirmed: 'Listo para el envío',
      picked_up: 'Recogido',
      in_transit: 'En camino',
      out_for_delivery: 'En reparto',
      delivered: 'Entregado',
      exception: 'Hay un problema con la entrega',
      returned: 'Devuelto al remitente',
      cancelled: 'Cancelado',
    },
    subStatuses: {
      'confirmed.label_created': 'La etiqueta está impresa; el transportista aún no tiene el paquete',
      'confirmed.awaiting_pickup': 'El paquete espera a que el transportista lo recoja',
      'picked_up.from_sender': 'El transportista recogió el paquete del remitente',
      'picked_up.dropped_off': 'El remitente dejó el paquete en un punto del transportista',
      'in_transit.departed_facility': 'El paquete salió de un centro del transportista',
      'in_transit.arrived_facility': 'El paquete llegó a un centro del transportista',
      'in_transit.customs': 'El paquete está en el despacho de aduanas',
      'in_transit.delayed': 'El paquete va con retraso',
      'in_transit.handed_to_partner': 'El transportista entregó el paquete a un transportista asociado',
      'out_for_delivery.on_vehicle': 'El paquete está en el vehículo de reparto',
      'out_for_delivery.attempted': 'Se intentó la entrega; el transportista lo volverá a intentar',
      'out_for_delivery.rescheduled': 'La entrega pasó a otro día a petición del destinatario',
      'delivered.recipient': 'Entregado al destinatario',
      'delivered.neighbour': 'Dejado con un vecino',
      'delivered.locker': 'Depositado en un casillero de paquetes',
      'delivered.pickup_point': 'Recogido por el destinatario en un punto de recogida',
      'delivered.safe_place': 'Dejado en el lugar seguro que indicó el destinatario',
      'exception.address_issue': 'La dirección es incorrecta o está incompleta',
      'exception.recipient_unavailable': 'Nadie recogió el paquete tras el último intento',
      'exception.refused': 'El destinatario rechazó el paquete',
      'exception.customs_hold': 'La aduana retiene el paquete',
      'exception.damaged': 'El paquete está dañado',
      'exception.lost': 'El transportista no encuentra el paquete',
      'exception.weather': 'El tiempo u otra causa de fuerza mayor detuvo el paquete',
      'returned.to_sender': 'El paquete volvió al remitente',
      'returned.refused': 'Devuelto tras el rechazo del destinatario',
      'cancelled.by_sender': 'El remitente canceló el envío',
    },
    exceptionReasons: {
      lost: 'El paquete se ha perdido',
      damaged: 'El paquete está dañado',
      held: 'El paquete está retenido',
    },
    milestones: {
      picked_up: { subject: 'Hemos recogido tu paquete', line: 'Hemos recogido tu paquete.' },
      out_for_delivery: { subject: 'Tu paquete está en reparto', line: 'Tu paquete está hoy en reparto.' },
      delivered: { subject: 'Tu paquete ha sido entregado', line: 'Tu paquete ha sido entregado.' },
      exception: {
        subject: 'Hay un problema con tu paquete',
        line: 'Hay un problema con la entrega de tu paquete.',
      },
      delayed: { subject: 'Tu paquete se retrasa', line: 'Tu paquete llegará más tarde de lo previsto.' },
    },
    pageTitle: 'Sigue tu paquete',
    timeline: 'Historial',
    noEvents: 'Todavía no ha pasado nada.',
    deliveredBy: 'Recibido por',
    estimate: 'Llegada prevista',
    help: '¿Necesitas ayuda?',
    poweredBy: 'Seguimiento por Waybill',
    notFoundTitle: 'No encontrado',
    notFoundBody: 'No hay nada en esta dirección.',
    trackLink: 'Sigue tu paquete',
    unsubscribe: 'No quiero más correos',
    unsubscribedTitle: 'No recibirás más correos',
    unsubscribedBody: 'No recibirás más correos sobre paquetes de este remitente.',
    unsubscribeConfirm: '¿Dejar de recibir correos sobre paquetes de este remitente?',
    unsubscribeButton: 'Dejar de recibir correos',
  },
};

/** One formatter per language, made once: building an Intl.DateTimeFormat costs more than using it. */
const FORMATS: Record<Language, Intl.DateTimeFormat> = {
  en: new Intl.DateTimeFormat('en-GB', { dateStyle: 'medium', timeStyle: 'short', timeZone: 'UTC' }),
  es: new Intl.DateTimeFormat('es-ES', { dateStyle: 'medium', timeStyle: 'short', timeZone: 'UTC' }),
};

const COUNTRY_NAMES: Record<Language, Intl.DisplayNames> = {
  en: new Intl.DisplayNames(['en'], { type: 'region' }),
  es: new Intl.DisplayNames(['es'], { type: 'region' }),
};

/** A country's name for an ISO 3166-1 alpha-2 code (the code itself when the runtime knows none). */
export function countryName(language: Language, code: string): string {
  try {
    return COUNTRY_NAMES[language].of(code) ?? code;
  } catch {
    return code;
  }
}

/** A time as the recipient reads it, in UTC (the page knows no zone of theirs). */
export function formatTime(language: Language, at: Date): string {
  return `${FORMATS[language].format(at)} UTC`;
}
