// Tokens per day of the month, stacked by model (Recharts). Loaded with the usage page only.
import { Bar, BarChart, CartesianGrid, Legend, ResponsiveContainer, Tooltip, XAxis, YAxis } from 'recharts';
import type { DayPoint } from '../lib/usage-shape';

const COLORS = ['#1d4ed8', '#b45309', '#047857', '#7c3aed', '#be123c', '#0e7490'];

export function UsageChart({ days, models }: { days: DayPoint[]; models: string[] }) {
  const data = days.map((d) => ({ label: d.label, ...d.byModel }));
  return (
    <figure className="chart" aria-label="Tokens per day, by model">
      <ResponsiveContainer width="100%" height={260}>
        <BarChart data={data}>
          <CartesianGrid strokeDasharray="3 3" />
          <XAxis dataKey="label" />
          <YAxis />
          <Tooltip />
          <Legend />
          {models.map((m, i) => (
            <Bar key={m} dataKey={m} stackId="tokens" fill={COLORS[i % COLORS.length]} />
          ))}
        </BarChart>
      </ResponsiveContainer>
      <figcaption className="muted">Tokens per day of the month (UTC days); the table has the same figures.</figcaption>
    </figure>
  );
}
