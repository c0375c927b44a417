import { SECTIONS, groupMembers, type Command, type CommandTable, type FlagSpec } from './command.js';

/** `--help` for brig, a group and a command: one layout for all (gh and kubectl's). */

const HELP_FLAG: FlagSpec = { name: 'help', description: 'show this help' };

/** Two columns, the left padded to its widest cell. */
function columns(rows: [string, string][], indent = '  '): string[] {
  const w = Math.max(0, ...rows.map(([l]) => l.length));
  return rows.map(([l, r]) => `${indent}${l.padEnd(w)}  ${r}`.trimEnd());
}

export function flagLabel(f: FlagSpec): string {
  return `--${f.name}${f.value ? ` ${f.value}` : ''}`;
}

export function renderCommandHelp(cmd: Command): string {
  const flags = [...cmd.flags, HELP_FLAG].map((f): [string, string] => [
    `${f.name === 'help' ? '-h, ' : '    '}${flagLabel(f)}`,
    `${f.description}${f.repeatable ? ' (repeatable)' : ''}`,
  ]);
  return [
    cmd.summary,
    '',
    'Usage:',
    `  ${cmd.usage}`,
    '',
    'Flags:',
    ...columns(flags),
    '',
    cmd.examples.length > 1 ? 'Examples:' : 'Example:',
    ...cmd.examples.map((e) => `  ${e}`),
    '',
    'Exit codes: `brig help exit-codes` (0 ok, 1 a run failed, 2 invalid input, …).',
    '',
  ].join('\n');
}

export function renderGroupHelp(table: CommandTable, group: string): string {
  const members = groupMembers(table, group);
  const rows = members.map((k): [string, string] => [k.slice(group.length + 1), table.commands[k]!.summary]);
  return [
    table.groups[group]!.summary,
    '',
    'Usage:',
    `  brig ${group} COMMAND [ARGS] [FLAGS]`,
    '',
    'Commands:',
    ...columns(rows),
    '',
    `Run \`brig ${group} COMMAND --help\` (or \`brig help ${group} COMMAND\`) for its flags and examples.`,
    '',
  ].join('\n');
}

/** Top-level names (commands without a group, and the groups) in the table's order. */
export function topLevelNames(table: CommandTable): string[] {
  return [...new Set(Object.keys(table.commands).map((k) => k.split(' ')[0]!))];
}

export function renderTopHelp(table: CommandTable): string {
  const { commands: COMMANDS, groups: GROUPS } = table;
  const names = topLevelNames(table);
  const w = Math.max(...names.map((n) => n.length));
  const out = ['brig — a sandboxed child-runner for LLM agent systems', '', 'Usage:', '  brig COMMAND [ARGS] [FLAGS]', ''];
  for (const s of SECTIONS) {
    const rows: [string, string][] = [];
    for (const name of names) {
      const g = GROUPS[name];
      if (g?.section === s.id) rows.push([name.padEnd(w), `${g.summary}`]);
      else if (!g && COMMANDS[name]?.section === s.id) rows.push([name.padEnd(w), COMMANDS[name]!.summary]);
    }
    if (rows.length) out.push(`${s.title}:`, ...columns(rows), '');
  }
  out.push(
    'Flags:',
    ...columns([
      ['-h, --help', 'show help (also `brig help COMMAND`)'],
      ['    --version', "print brig's version"],
      ['    --json', 'on most commands: print one JSON document instead of text'],
    ]),
    '',
    "Run `brig COMMAND --help` for a command's flags and examples; `brig help exit-codes` for what each exit code means.",
    'Without `brig serve`, each command runs an in-process supervisor. State lives under $BRIG_HOME (default ~/.brig).',
    '',
  );
  return out.join('\n');
}
