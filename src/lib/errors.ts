/**
 * The closed list of problem codes of the API, each with its HTTP status and title.
 * Services throw AppError with one of these; src/http/errors.ts turns it into RFC 9457 problem details.
 * OAuth endpoint errors are separate (src/modules/oauth/errors.ts): they follow RFC 6749.
 */
export const problemCodes = {
  'request.malformed_json': [400, 'The body is not valid JSON'],
  'request.unsupported_media_type': [415, 'Unsupported content type'],
  'request.body_too_large': [413, 'The body is too large'],
  'request.not_found': [404, 'No such route'],
  'request.method_not_allowed': [405, 'Method not allowed'],
  'request.too_deep': [400, 'The body is nested too deeply'],
  'request.bad_url': [400, 'The URL is not valid'],
  'request.bad_request': [400, 'The request is malformed'],
  'request.timeout': [408, 'The request took too long to arrive'],
  'request.uri_too_long': [414, 'The URL is too long'],
  'request.header_too_large': [431, 'The request headers are too large'],
  'request.expectation_failed': [417, 'The Expect header cannot be met'],
  'validation.failed': [400, 'The request is not valid'],
  rate_limited: [429, 'Too many requests'],
  'auth.invalid_token': [401, 'Missing, unknown, expired or revoked token'],
  'auth.invalid_credentials': [401, 'Wrong e-mail or password'],
  'auth.insufficient_scope': [403, 'The token or role does not allow this call'],
  'auth.session_required': [403, "This call needs a signed-in person's token"],
  'auth.email_not_verified': [403, 'Confirm your e-mail address first: open the link sent to it'],
  'auth.verification_link_invalid': [400, 'The verification link is unknown, used or expired'],
  'user.email_already_verified': [409, 'The e-mail address is verified already'],
  'user.email_taken': [409, 'An account with this e-mail exists'],
  'user.not_found': [404, 'No such person'],
  'company.not_found': [404, 'No such company'],
  'member.not_found': [404, 'No such member'],
  'member.already_exists': [409, 'That person is already a member'],
  'member.last_owner': [409, 'A company keeps at least one owner'],
  'member.email_not_verified': [409, 'That person has not confirmed their e-mail address yet'],
  'customer_account.not_found': [404, 'No such merchant account'],
  'api_token.not_found': [404, 'No such API token'],
  'shipment.not_found': [404, 'No such shipment'],
  'shipment.invalid_transition': [409, 'That status move is not allowed'],
  'shipment.invalid_currency': [400, 'Unknown currency'],
  'shipment.invalid_cod': [400, 'Cash on delivery needs an amount'],
  'shipment.live': [409, 'Only a test shipment can be simulated'],
  'tracking.invalid_country': [422, 'Not an ISO 3166-1 alpha-2 country code'],
  'tracking.invalid_sub_status': [422, 'The sub-status is not one of the catalogue for that status'],
  'tracking.invalid_estimated_delivery': [422, 'The estimate ends before it begins'],
  'tracking.proof_before_delivery': [422, 'Proof of delivery goes with the status delivered'],
  'tracking.invalid_message': [422, 'The checkpoint message is too long'],
  'idempotency.key_reused': [409, 'The Idempotency-Key was used with another request'],
  'idempotency.in_progress': [409, 'A request with this Idempotency-Key is still running'],
  'webhook_endpoint.not_found': [404, 'No such webhook endpoint'],
  'webhook_endpoint.url_not_allowed': [422, 'The URL is not allowed'],
  'webhook_endpoint.destination_insecure': [422, 'A broker outside the private ranges must use TLS'],
  'webhook_endpoint.limit_reached': [409, 'The webhook endpoint limit is reached'],
  'webhook_endpoint.invalid_event_type': [400, 'Unknown event type'],
  'webhook_endpoint.headers_required': [
    422,
    'A new url needs the custom headers stated in full (or cleared): their values do not follow the endpoint unseen',
  ],
  'webhook_endpoint.event_type_for_apps': [
    422,
    'Apps receive these event types at their events URL: endpoints subscribe only to the catalogue entries with audience "endpoints"',
  ],
  'webhook_endpoint.event_type_not_in_version': [
    422,
    'The event type is not in the api_version of the endpoint: pin it to a version that has it',
  ],
  'webhook_endpoint.disabled': [409, 'The webhook endpoint is disabled'],
  'webhook_delivery.not_found': [404, 'No such webhook delivery'],
  'webhook_listener.test_mode_only': [403, 'Only a test API key may listen'],
  'webhook_listener.limit_reached': [409, 'The listener limit is reached'],
  'webhook_listener.not_found': [404, 'No such listener'],
  'webhook_listener.already_connected': [409, 'The listener is connected already'],
  'webhook_listener.upgrade_required': [426, 'Connect with a WebSocket'],
  'inbound_source.not_found': [404, 'No such inbound source'],
  'inbound_message.not_found': [404, 'No such inbound message'],
  'inbound.signature_invalid': [
    401,
    "The message's webhook-id, webhook-timestamp and webhook-signature do not verify with the source's secret",
  ],
  'installation.not_found': [404, 'No such installation'],
  'installation.needs_approval': [
    409,
    "The installation's approver left or lost the role; it receives nothing until a person approves it again",
  ],
  'installation.scope_not_granted': [409, "The installation's grant does not allow this event type"],
  'installation.scope_not_held': [404, 'The installation does not hold this scope'],
  'installation.last_scope': [
    409,
    'The last scope of an installation cannot be given back: uninstall instead',
  ],
  'app.not_found': [404, 'No such app'],
  'app.published_requires_review': [409, 'A published app changes this field through review'],
  'app.invalid_redirect_uri': [400, 'Redirect URI not allowed'],
  'app.invalid_scope': [400, 'Unknown scope'],
  'app.not_confidential': [409, 'A public app has no client secret'],
  'app.suspended': [409, 'The app is suspended'],
  'app.invalid_status': [409, 'The app cannot move from its status'],
  'review.conflict_of_interest': [403, 'A reviewer does not judge their own app or a colleague’s'],
  'app.events_url_not_allowed': [422, 'The events URL is not allowed'],
  'app_version.not_found': [404, 'No such app version'],
  'app_config.scope_missing': [422, 'A subscribed event type needs a scope the manifest lacks'],
  'filter.unknown_path': [422, 'The filter names a path the event types do not have'],
  'privacy_request.invalid_recipient': [400, 'Give the recipient an e-mail or a phone'],
  'submission.not_found': [404, 'No such submission'],
  'submission.already_pending': [409, 'A submission is already waiting'],
  'submission.cooling_down': [429, 'Too many rejections: new submissions wait'],
  'submission.invalid_state': [409, 'The submission cannot move from its state'],
  'submission.requirements_missing': [422, 'The app lacks what a submission needs'],
  'listing_media.invalid': [422, 'The image is not one the listing takes'],
  'listing_media.not_found': [404, 'No such listing image'],
  'review.not_eligible': [
    403,
    'Only an owner or admin of a company whose installation has been in force 7 days may review',
  ],
  'review.already_exists': [409, 'Your company has reviewed this app already'],
  'review.not_found': [404, 'No such review'],
  'privacy_request.not_found': [404, 'No such privacy request'],
  'branding.accent_color_contrast': [
    422,
    'Neither white nor dark text on this colour reaches the WCAG AA contrast of 4.5 to 1',
  ],
  'branding.logo_invalid': [422, 'The logo is not a PNG, JPEG or WebP image of at most 1 MB'],
  'branding.logo_not_found': [404, 'The company has no logo'],
  'mcp.disabled': [403, "The company's agent access does not allow this mode"],
  'agent_connection.not_found': [404, 'No such agent connection'],
  'service.unavailable': [503, 'The service cannot reach its database; try again shortly'],
  'service.starting': [503, 'The service is starting; try again shortly'],
  internal: [500, 'Internal error'],
} as const satisfies Record<string, readonly [number, string]>;

export type ProblemCode = keyof typeof problemCodes;

export interface FieldError {
  path: string;
  message: string;
}

/** An expected failure with a stable code. Anything else thrown is a bug and answers an empty 500. */
export class AppError extends Error {
  readonly code: ProblemCode;
  readonly status: number;
  readonly title: string;
  readonly extra: Record<string, unknown>;
  /** Seconds for a Retry-After header (a 429 that knows when it ends). */
  retryAfter: number | undefined;

  /** `status` overrides the code's own where the contract gives one code two statuses. */
  constructor(code: ProblemCode, detail?: string, extra: Record<string, unknown> = {}, status?: number) {
    const [codeStatus, title] = problemCodes[code];
    super(detail ?? title);
    this.name = 'AppError';
    this.code = code;
    this.status = status ?? codeStatus;
    this.title = title;
    this.extra = extra;
    this.retryAfter = undefined;
  }
}

/**
 * A request that does not hold: 400, or 422 for a well-formed value the contract refuses (a
 * reserved header name: CONTRACT.md).
 */
export function validationError(
  errors: FieldError[],
  detail = 'The request is not valid',
  status?: 400 | 422,
): AppError {
  return new AppError('validation.failed', detail, { errors }, status);
}
