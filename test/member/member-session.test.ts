/**
 * MemberSession's joins (issue 38): after its coordinator's loss, the member's fetch and its heartbeat both hear
 * `UNKNOWN_MEMBER_ID` from the new coordinator; the member must join once, not once per request that heard it.
 */
import { describe, expect, it } from 'vitest';
import { MemberSession } from '../../src/member/member-session.js';
import { OnelogError } from '../../src/protocol/errors.js';
import type { HeartbeatRequest, JoinGroupRequest, MemberAssignment } from '../../src/protocol/groups.js';

/** An API whose joins wait until released, numbering member ids; heartbeats answer as told. */
function fakeCoordinator() {
  const joins: Array<{ resolve: (a: MemberAssignment) => void }> = [];
  let heartbeatAnswer: () => Promise<MemberAssignment> = () => Promise.reject(new Error('no heartbeat expected'));
  const heartbeats: HeartbeatRequest[] = [];
  const api = {
    joinGroup: (_request: JoinGroupRequest) => new Promise<MemberAssignment>((resolve) => joins.push({ resolve })),
    heartbeat: (request: HeartbeatRequest) => {
      heartbeats.push(request);
      return heartbeatAnswer();
    },
    leaveGroup: async () => {},
  };
  const answer = (n: number): MemberAssignment => ({
    groupId: 'g', memberId: `member-${n}`, generationId: n, assignment: [], heartbeatIntervalMs: 60_000, state: 'Stable',
  });
  return {
    api, joins, heartbeats, answer,
    answerHeartbeats: (f: () => Promise<MemberAssignment>) => (heartbeatAnswer = f),
  };
}

const hooks = { onAssigned: async () => undefined, onPaused: () => {} };
const unknownMember = () => new OnelogError('UNKNOWN_MEMBER_ID', 'the new coordinator does not know this member');

describe('MemberSession', () => {
  it('shares one join between every caller while it is in flight', async () => {
    const c = fakeCoordinator();
    const session = new MemberSession(c.api, { groupId: 'g', topics: ['t'], clientId: 'c' }, hooks);
    const first = session.start();
    const second = session.start();
    expect(c.joins).toHaveLength(1);
    expect(session.isJoining).toBe(true);
    c.joins[0]!.resolve(c.answer(1));
    await Promise.all([first, second]);
    expect(session.memberId).toBe('member-1');
    expect(session.isJoining).toBe(false);
    await session.leave();
  });

  it('joins once when a fetch and a heartbeat of the old member id are both fenced', async () => {
    const c = fakeCoordinator();
    const session = new MemberSession(c.api, { groupId: 'g', topics: ['t'], clientId: 'c' }, hooks);
    const started = session.start();
    c.joins[0]!.resolve(c.answer(1));
    await started;

    // The coordinator died; the new one knows no member: the heartbeat is answered UNKNOWN_MEMBER_ID late.
    let answerHeartbeat: (err: Error) => void = () => {};
    c.answerHeartbeats(() => new Promise((_, reject) => (answerHeartbeat = reject)));
    const heartbeat = session.heartbeat().catch((err: unknown) => err);
    await Promise.resolve();
    expect(c.heartbeats.map((h) => h.memberId)).toEqual(['member-1']);
    // The fetch hears it first: the consumer's loop rejoins.
    expect(session.noteFencing(unknownMember(), 'member-1')).toBe(true);
    expect(session.fenced).not.toBeNull();
    const rejoin = session.start();
    expect(session.fenced).toBeNull();
    // The heartbeat's answer comes while the join is in flight: stale, it fences nothing.
    answerHeartbeat(unknownMember());
    expect(await heartbeat).toMatchObject({ code: 'UNKNOWN_MEMBER_ID' });
    expect(session.fenced).toBeNull();
    // A heartbeat asked for while the join is in flight sends nothing (it would go as the old member).
    await session.heartbeat();
    expect(c.heartbeats).toHaveLength(1);
    c.joins[1]!.resolve(c.answer(2));
    await rejoin;
    expect(session.memberId).toBe('member-2');
    // A late answer to a request sent as member-1 (a fetch sent ahead) is stale too.
    expect(session.noteFencing(unknownMember(), 'member-1')).toBe(true);
    expect(session.fenced).toBeNull();
    expect(c.joins).toHaveLength(2);
    // A fencing answer to the current member id still fences it.
    expect(session.noteFencing(unknownMember(), 'member-2')).toBe(true);
    expect(session.fenced).not.toBeNull();
    await session.leave();
  });
});
