import type { Migration } from '../../../core/db/migrations';

/**
 * Whether a call's price was positioned on the network's price observations (no competitor list of
 * the caller's own): such a price, accepted, is an echo of that evidence, not a new observation.
 */
export const usageNetworkEvidence: Migration = {
  name: '0003-network-evidence',
  async up({ sequelize }) {
    await sequelize.query('ALTER TABLE usage_events ADD COLUMN network_evidence boolean NOT NULL DEFAULT false');
  },
};
