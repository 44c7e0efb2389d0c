/**
 * Teams (issue 15; contract §3 Teams, Team roles, Team context): your team's members and invitations, roles and the
 * permission categories each grants, and the team context — a key that acts for the team, bounded by your role
 * (contract §3: team context is a key made with `team_id`).
 */
import { useState, type FormEvent } from 'react';
import { api, GpuplaneError } from '../lib/api.js';
import { utcTime } from '../lib/format.js';
import { CATEGORIES, describeCategory, permissionDoc } from '../lib/permissions.js';
import { ErrorNote, Field } from '../components/Field.js';
import { CopyButton } from '../components/CopyButton.js';
import { Confirm } from '../components/Modal.js';
import { useAction, useLoad } from '../components/useLoad.js';
import { AccountTabs } from '../components/AccountTabs.js';
import { useSession } from '../lib/session.js';

export default function TeamsPage() {
  const team = useLoad(() => api.team.members().catch((err) => { if (err instanceof GpuplaneError && err.status === 404) return null; throw err; }));
  const roles = useLoad(() => (team.data ? api.team.roles() : Promise.resolve([])), [team.data?.team_id]);
  const [teamName, setTeamName] = useState('');
  const [inviteEmail, setInviteEmail] = useState('');
  const [inviteRole, setInviteRole] = useState('');
  const [roleName, setRoleName] = useState('');
  const [rolePerms, setRolePerms] = useState<Set<string>>(new Set(['user_read', 'instance_read']));
  const [removing, setRemoving] = useState<{ id: number; email: string } | null>(null);
  const [teamKey, setTeamKey] = useState<string | null>(null);
  const create = useAction();
  const invite = useAction();
  const member = useAction();
  const role = useAction();
  const keyAct = useAction();
  const [invited, setInvited] = useState<string | null>(null);
  const [inviteCode, setInviteCode] = useState('');
  const [joined, setJoined] = useState<string | null>(null);
  const accept = useAction();
  const { context, switchTeam, refresh } = useSession();
  const ctxAct = useAction();
  const current = context.teams.find((t) => t.team_id === context.team_id);

  const createTeam = async (e: FormEvent) => {
    e.preventDefault();
    if (await create.run(() => api.team.create(teamName.trim()))) await team.reload();
  };

  return (
    <section>
      <AccountTabs />
      <h1>Teams</h1>
      {context.teams.length > 0 && (
        <>
          <h2>Your context</h2>
          <p role="status">
            {current ? <>You are acting for team <strong>{current.team_name}</strong> as {current.role}: pages show and change the team's resources, within your role.</> : 'You are acting in your personal context.'}
          </p>
          <ul>
            {context.teams.map((t) => (
              <li key={t.team_id}>
                Team {t.team_name} (#{t.team_id}), your role: {t.role}{' '}
                {t.team_id === context.team_id
                  ? <span className="badge ok">Current</span>
                  : <button type="button" className="small" disabled={ctxAct.busy} onClick={() => ctxAct.run(() => switchTeam(t.team_id))}>Act for team {t.team_name}</button>}
              </li>
            ))}
          </ul>
          {context.team_id !== null && <button type="button" disabled={ctxAct.busy} onClick={() => ctxAct.run(() => switchTeam(null))}>Back to personal context</button>}
          <ErrorNote error={ctxAct.error} />
        </>
      )}
      {context.team_id === null && (
        <>
          <h2>Accept an invitation</h2>
          <p>Invited to a team? Enter the code from the invitation e-mail sent to your address.</p>
          <form className="row-form" aria-label="Accept an invitation" onSubmit={async (e) => {
            e.preventDefault();
            setJoined(null);
            const r = await accept.run(() => api.team.accept(inviteCode.trim()));
            if (r) { setJoined(`You joined team ${r.team_name} as ${r.role}.`); setInviteCode(''); await refresh(); }
          }}>
            <Field label="Invitation code" autoComplete="off" required value={inviteCode} onChange={(e) => setInviteCode(e.target.value)} error={accept.error} />
            <div className="field"><button type="submit" className="primary" disabled={accept.busy}>Accept invitation</button></div>
          </form>
          {joined && <p role="status" className="notice">{joined}</p>}
        </>
      )}
      <ErrorNote error={team.error} />
      {team.data === null && (
        <>
          <p>You do not own a team. Create one to share machines, instances and billing with others, each with a role.</p>
          <form onSubmit={createTeam} className="row-form">
            <Field label="Team name" value={teamName} maxLength={100} required onChange={(e) => setTeamName(e.target.value)} error={create.error} />
            <div className="field"><button type="submit" className="primary" disabled={create.busy}>Create team</button></div>
          </form>
        </>
      )}
      {team.data && (
        <>
          <p>Team <strong>{team.data.team_name}</strong> (#{team.data.team_id}).</p>

          <h2>Members</h2>
          <ErrorNote error={member.error} />
          <div className="table-wrap">
            <table aria-label="Members">
              <thead><tr><th scope="col">E-mail</th><th scope="col">Name</th><th scope="col">Role</th><th scope="col">Joined</th><th scope="col"><span className="sr-only">Actions</span></th></tr></thead>
              <tbody>
                {team.data.members.map((m) => (
                  <tr key={m.id}>
                    <td>{m.email}</td>
                    <td>{m.full_name}</td>
                    <td>
                      {m.is_owner ? <span className="badge ok">Owner</span> : (
                        <select aria-label={`Role of ${m.email}`} value={m.role} onChange={async (e) => { const r = e.target.value; if (await member.run(() => api.team.setMemberRole(m.user_id, r))) await team.reload(); }}>
                          {(roles.data ?? []).map((r) => <option key={r.id} value={r.name}>{r.name}</option>)}
                          {!(roles.data ?? []).some((r) => r.name === m.role) && <option value={m.role}>{m.role}</option>}
                        </select>
                      )}
                    </td>
                    <td>{utcTime(m.joined_at)}</td>
                    <td>{!m.is_owner && <button type="button" className="small danger" aria-label={`Remove ${m.email}`} onClick={() => setRemoving({ id: m.user_id, email: m.email })}>Remove</button>}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>

          <h2>Invitations</h2>
          <form className="row-form" onSubmit={async (e) => {
            e.preventDefault();
            setInvited(null);
            if (await invite.run(() => api.team.invite(inviteEmail.trim(), inviteRole || (roles.data?.[0]?.name ?? '')))) { setInvited(`Invitation sent to ${inviteEmail.trim()}.`); setInviteEmail(''); await team.reload(); }
          }}>
            <Field label="E-mail to invite" type="email" required value={inviteEmail} onChange={(e) => setInviteEmail(e.target.value)} error={invite.error} />
            <div className="field">
              <label htmlFor="invite-role">Role</label>
              <select id="invite-role" value={inviteRole} onChange={(e) => setInviteRole(e.target.value)}>
                {(roles.data ?? []).map((r) => <option key={r.id} value={r.name}>{r.name}</option>)}
              </select>
            </div>
            <div className="field"><button type="submit" className="primary" disabled={invite.busy}>Invite</button></div>
          </form>
          {invited && <p role="status" className="notice">{invited}</p>}
          {team.data.invitations.length === 0 ? <p>No pending invitations.</p> : (
            <ul>{team.data.invitations.map((i) => <li key={i.id}>{i.email} as {i.role}, expires {utcTime(i.expires_at)}</li>)}</ul>
          )}

          <h2>Roles</h2>
          <ErrorNote error={roles.error} />
          {(roles.data ?? []).length > 0 && (
            <div className="table-wrap">
              <table aria-label="Roles">
                <thead><tr><th scope="col">Role</th><th scope="col">Permissions</th><th scope="col"><span className="sr-only">Actions</span></th></tr></thead>
                <tbody>
                  {roles.data!.map((r) => (
                    <tr key={r.id}>
                      <td>{r.name}</td>
                      <td className="wrap">{r.permissions.length === CATEGORIES.length ? 'All' : r.permissions.join(', ') || 'None'}</td>
                      <td><button type="button" className="small danger" aria-label={`Delete role ${r.name}`} onClick={async () => { if (await role.run(() => api.team.removeRole(r.name))) await roles.reload(); }}>Delete</button></td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
          <form onSubmit={async (e) => {
            e.preventDefault();
            if (await role.run(() => api.team.createRole(roleName.trim(), permissionDoc(rolePerms)))) { setRoleName(''); await roles.reload(); }
          }}>
            <h3>New role</h3>
            <Field label="Role name" value={roleName} maxLength={64} required onChange={(e) => setRoleName(e.target.value)} />
            <fieldset>
              <legend>Permissions of the role</legend>
              {CATEGORIES.map((c) => (
                <label key={c} className="check">
                  <input type="checkbox" checked={rolePerms.has(c)} onChange={(e) => setRolePerms((s) => { const n = new Set(s); if (e.target.checked) n.add(c); else n.delete(c); return n; })} /> <code>{c}</code> — {describeCategory(c)}
                </label>
              ))}
            </fieldset>
            <ErrorNote error={role.error} />
            <button type="submit" disabled={role.busy}>Create role</button>
          </form>

          <h2>Team context</h2>
          <p>To act for the team (its instances, machines and billing) in this browser, switch into its context above or in the header; elsewhere (CLI, SDK), use a key made for the team. Either can do what your role allows.</p>
          <button type="button" disabled={keyAct.busy} onClick={async () => { const r = await keyAct.run(() => api.apiKeys.create({ name: `team ${team.data!.team_name}`, team_id: team.data!.team_id })); if (r) setTeamKey(r.key); }}>
            Create a key for this team
          </button>
          <ErrorNote error={keyAct.error} />
          {teamKey && (
            <div className="notice" role="status">
              <p>Team key created. Copy it now: it will not be shown again. Use it with <code>gpuplane --api-key</code> or the SDK.</p>
              <p><code className="cmd">{teamKey}</code> <CopyButton text={teamKey} label="Copy the team key" /></p>
            </div>
          )}
        </>
      )}
      <Confirm open={removing !== null} title="Remove member" message={`Remove ${removing?.email} from the team? Their team keys stop working.`} action="Remove" busy={member.busy}
        onClose={() => setRemoving(null)}
        onConfirm={async () => { const r = removing!; setRemoving(null); if (await member.run(() => api.team.removeMember(r.id))) await team.reload(); }} />
    </section>
  );
}
