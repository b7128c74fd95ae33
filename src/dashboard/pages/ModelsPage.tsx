// Models (public): the catalog with categories, prices and availability. On a phone each model's
// cells stack, labelled.
import { useQuery } from 'urql';
import { Empty, ErrorMessage, Loading } from '../components/States';
import { graphql } from '../gql';

const ModelsDoc = graphql(`
  query Models {
    models {
      id
      category
      status
      available
      unavailableReason
      pricing {
        inputPricePerMillion
        outputPricePerMillion
        pricePerMillionTokens
        currency
      }
    }
  }
`);

const price = (n: number | null | undefined) => (n === null || n === undefined ? '—' : n.toFixed(2));

/**
 * The catalog's page, or its section inside another page (the Operator page's model availability):
 * `headingLevel` 2 or 3 puts its heading under that page's own, so that a page has one h1.
 */
export default function ModelsPage({ headingLevel = 1 }: { headingLevel?: 1 | 2 | 3 }) {
  const [{ data, fetching, error }, refetch] = useQuery({ query: ModelsDoc });
  const Heading = `h${headingLevel}` as const;
  return (
    <>
      <Heading>Models</Heading>
      {fetching && !data ? <Loading what="the catalog" /> : null}
      {error ? <ErrorMessage error={error} onRetry={() => refetch({ requestPolicy: 'network-only' })} /> : null}
      {data && data.models.length === 0 ? <Empty>No models are configured.</Empty> : null}
      {data && data.models.length > 0 ? (
        <div className="table-wrap stack">
          <table>
            <caption>Prices per million tokens (USD)</caption>
            <thead>
              <tr>
                <th scope="col">Model</th>
                <th scope="col">Category</th>
                <th scope="col">Input</th>
                <th scope="col">Output</th>
                <th scope="col">Status</th>
                <th scope="col">Available</th>
              </tr>
            </thead>
            <tbody>
              {data.models.map((m) => (
                <tr key={m.id}>
                  <th scope="row">{m.id}</th>
                  <td data-label="Category">{m.category}</td>
                  <td data-label="Input">{price(m.pricing.inputPricePerMillion ?? m.pricing.pricePerMillionTokens)}</td>
                  <td data-label="Output">{price(m.pricing.outputPricePerMillion)}</td>
                  <td data-label="Status">{m.status}</td>
                  <td data-label="Available">{m.available ? 'Yes' : `No${m.unavailableReason ? `: ${m.unavailableReason}` : ''}`}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
    </>
  );
}
