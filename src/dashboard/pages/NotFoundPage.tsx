import { Link } from '../components/Link';

export default function NotFoundPage() {
  return (
    <section aria-labelledby="nf-title">
      <h1 id="nf-title">Page not found</h1>
      <p>
        There is no such page. <Link to="/">Go to the overview</Link>.
      </p>
    </section>
  );
}
