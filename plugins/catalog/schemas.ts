import { z } from 'zod';
import { limitParam, cursorParam } from '../../core/pagination';

const tagValue = z.string().max(400);

export const catalogueQuery = z.object({
  search: z.string().max(100).optional().describe('Case-insensitive text searched in the name, the description and the tags.'),
  // No count limit here: the route counts the tags of both forms together and says how many it takes.
  tag: z
    .union([tagValue, z.array(tagValue)])
    .optional()
    .describe('Tag filter: repeat it (tag=a&tag=b) or give a comma list (tag=a,b); a function must carry every tag listed (case-insensitive).'),
  limit: limitParam(20),
  cursor: cursorParam,
});

export const catalogueParams = z.object({
  id: z.string().min(1).max(100).describe('Function id (or its name).'),
});

export const leaderboardQuery = z.object({
  limit: limitParam(50),
  cursor: cursorParam,
});
