import type { Migration } from 'kysely/migration';
import * as accounts from './0001_accounts.ts';
import * as shipments from './0002_shipments.ts';
import * as webhooks from './0003_webhooks.ts';
import * as appsOAuth from './0004_apps_oauth.ts';
import * as deliveryTargets from './0005_delivery_targets.ts';
import * as attemptsByEndpoint from './0006_webhook_attempts_by_endpoint.ts';
import * as installationApproval from './0007_installation_approval.ts';
import * as appStore from './0008_app_store.ts';
import * as accountsHardening from './0009_accounts_hardening.ts';
import * as webhookListeners from './0010_webhook_listeners.ts';
import * as deliveryQueueStorage from './0011_delivery_queue_storage.ts';
import * as attemptPartitions from './0012_attempt_partitions.ts';
import * as claimByTarget from './0013_claim_by_target.ts';
import * as deliveryQueue from './0014_delivery_queue.ts';
import * as claimAndRecordFunctions from './0015_claim_and_record_functions.ts';
import * as deliveryPayloadByReference from './0016_delivery_payload_by_reference.ts';
import * as fanOutFunction from './0017_fan_out_function.ts';
import * as timeOrderedDeliveryIds from './0018_time_ordered_delivery_ids.ts';
import * as endpointDeliveryControls from './0026_endpoint_delivery_controls.ts';
import * as failingNotice from './0030_failing_notice.ts';
import * as eventRetentionAndErasure from './0031_event_retention_and_erasure.ts';
import * as verifiedPeople from './0032_verified_people.ts';
import * as installationGrants from './0033_installation_grants.ts';
import * as deliveryControlsInTheClaim from './0034_delivery_controls_in_the_claim.ts';
import * as outboundBudget from './0035_outbound_budget.ts';
import * as developerConsole from './0036_developer_console.ts';
import * as functionSearchPath from './0040_function_search_path.ts';
import * as orderingPerShipment from './0041_ordering_per_shipment.ts';
import * as agents from './0045_agents.ts';
import * as storeTrust from './0050_store_trust.ts';
import * as appVersions from './0060_app_versions.ts';
import * as endpointFilters from './0061_endpoint_filters.ts';
import * as appSubscriptions from './0062_app_subscriptions.ts';
import * as subscriptionFanOutByTenant from './0063_subscription_fanout_by_tenant.ts';
import * as orderedSubscriptions from './0064_ordered_subscriptions.ts';
import * as firstAttemptInDelivery from './0065_first_attempt_in_delivery.ts';
import * as claimCostPerRow from './0066_claim_cost_per_row.ts';
import * as grantPerResource from './0067_grant_per_resource.ts';
import * as refreshReplay from './0068_refresh_replay.ts';
import * as destinations from './0070_destinations.ts';
import * as agentClientLimits from './0073_agent_client_limits.ts';
import * as subscriptionDestinations from './0078_subscription_destinations.ts';
import * as tenantKeys from './0079_tenant_keys.ts';
import * as deliveryRows from './0080_delivery_rows.ts';
import * as linesFollowTenant from './0081_lines_follow_tenant.ts';
import * as claimRateLimitsApart from './0082_claim_rate_limits_apart.ts';
import * as claimGenericPlan from './0083_claim_generic_plan.ts';
import * as apiTokenAudience from './0084_api_token_audience.ts';
import * as tracking from './0086_tracking.ts';
import * as eventVersions from './0087_event_versions.ts';
import * as shipmentSimulations from './0088_shipment_simulations.ts';
import * as inboundSources from './0090_inbound_sources.ts';
import * as recipients from './0092_recipients.ts';
import * as pageFlashes from './0095_page_flashes.ts';
import * as appEventVersions from './0096_app_event_versions.ts';
import * as fanOutWithLatest from './0097_fan_out_with_latest.ts';

/** Ordered by name; the Migrator applies the ones not yet applied. */
export const migrations: Record<string, Migration> = {
  '0001_accounts': accounts,
  '0002_shipments': shipments,
  '0003_webhooks': webhooks,
  '0004_apps_oauth': appsOAuth,
  '0005_delivery_targets': deliveryTargets,
  '0006_webhook_attempts_by_endpoint': attemptsByEndpoint,
  '0007_installation_approval': installationApproval,
  '0008_app_store': appStore,
  '0009_accounts_hardening': accountsHardening,
  '0010_webhook_listeners': webhookListeners,
  '0011_delivery_queue_storage': deliveryQueueStorage,
  '0012_attempt_partitions': attemptPartitions,
  '0013_claim_by_target': claimByTarget,
  '0014_delivery_queue': deliveryQueue,
  '0015_claim_and_record_functions': claimAndRecordFunctions,
  '0016_delivery_payload_by_reference': deliveryPayloadByReference,
  '0017_fan_out_function': fanOutFunction,
  '0018_time_ordered_delivery_ids': timeOrderedDeliveryIds,
  '0026_endpoint_delivery_controls': endpointDeliveryControls,
  '0030_failing_notice': failingNotice,
  '0031_event_retention_and_erasure': eventRetentionAndErasure,
  '0032_verified_people': verifiedPeople,
  '0033_installation_grants': installationGrants,
  '0034_delivery_controls_in_the_claim': deliveryControlsInTheClaim,
  '0035_outbound_budget': outboundBudget,
  '0036_developer_console': developerConsole,
  '0040_function_search_path': functionSearchPath,
  '0041_ordering_per_shipment': orderingPerShipment,
  '0045_agents': agents,
  '0050_store_trust': storeTrust,
  '0060_app_versions': appVersions,
  '0061_endpoint_filters': endpointFilters,
  '0062_app_subscriptions': appSubscriptions,
  '0063_subscription_fanout_by_tenant': subscriptionFanOutByTenant,
  '0064_ordered_subscriptions': orderedSubscriptions,
  '0065_first_attempt_in_delivery': firstAttemptInDelivery,
  '0066_claim_cost_per_row': claimCostPerRow,
  '0067_grant_per_resource': grantPerResource,
  '0068_refresh_replay': refreshReplay,
  '0070_destinations': destinations,
  '0073_agent_client_limits': agentClientLimits,
  '0078_subscription_destinations': subscriptionDestinations,
  '0079_tenant_keys': tenantKeys,
  '0080_delivery_rows': deliveryRows,
  '0081_lines_follow_tenant': linesFollowTenant,
  '0082_claim_rate_limits_apart': claimRateLimitsApart,
  '0083_claim_generic_plan': claimGenericPlan,
  '0084_api_token_audience': apiTokenAudience,
  '0086_tracking': tracking,
  '0087_event_versions': eventVersions,
  '0088_shipment_simulations': shipmentSimulations,
  '0090_inbound_sources': inboundSources,
  '0092_recipients': recipients,
  '0095_page_flashes': pageFlashes,
  '0096_app_event_versions': appEventVersions,
  '0097_fan_out_with_latest': fanOutWithLatest,
};
