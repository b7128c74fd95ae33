// Playground: pick a chat model, write a prompt, watch the answer stream over graphql-ws (a reasoning
// model's reasoning above it, as it comes), with the tokens and the cost (at the model's list
// prices, rounded as billing rounds) at the end, and why an answer ended early. Leaving the page
// ends the subscription: the server stops the call, and its billing, there.
import { type FormEvent, useEffect, useRef, useState } from 'react';
import { stringifyDocument, useQuery } from 'urql';
import { subscribeOnce } from '../client';
import { Empty, ErrorMessage, Loading } from '../components/States';
import { graphql } from '../gql';
import type { ChatModelsQuery, FinishReason } from '../gql/graphql';
import { formatMoney, formatTokens, listPriceCost } from '../lib/money';

const ChatModelsDoc = graphql(`
  query ChatModels {
    models(category: chat) {
      id
      available
      pricing {
        inputPricePerMillion
        outputPricePerMillion
      }
    }
  }
`);

const StreamDoc = graphql(`
  subscription PlaygroundStream($input: ChatCompletionInput!) {
    chatCompletionStream(input: $input) {
      choices {
        delta {
          content
          reasoningContent
        }
        finishReason
      }
      usage {
        promptTokens
        completionTokens
        totalTokens
      }
    }
  }
`);

type ChatModel = ChatModelsQuery['models'][number];

export default function PlaygroundPage() {
  const [{ data, fetching, error }, refetchModels] = useQuery({ query: ChatModelsDoc });
  const [model, setModel] = useState('');
  const [prompt, setPrompt] = useState('');
  const [answer, setAnswer] = useState('');
  const [reasoning, setReasoning] = useState('');
  const [usage, setUsage] = useState<{ promptTokens: number; completionTokens: number; totalTokens: number } | null>(null);
  const [streamError, setStreamError] = useState<string | null>(null);
  const [running, setRunning] = useState(false);
  const [finish, setFinish] = useState<FinishReason | null>(null);
  // The model the answer came from, priced at its prices: choosing another one afterwards (for the
  // next prompt) changes nothing about this answer or what it cost.
  const [answeredBy, setAnsweredBy] = useState<ChatModel | null>(null);
  const stop = useRef<(() => void) | null>(null);
  // Leaving the page mid-stream completes the operation: the server aborts the model's call.
  useEffect(
    () => () => {
      stop.current?.();
      stop.current = null;
    },
    [],
  );
  const models = (data?.models ?? []).filter((m) => m.available);
  const chosen = models.find((m) => m.id === model) ?? models[0];
  const run = (e: FormEvent) => {
    e.preventDefault();
    if (!chosen || !prompt.trim()) return;
    setAnswer('');
    setReasoning('');
    setUsage(null);
    setStreamError(null);
    setFinish(null);
    setAnsweredBy(chosen);
    setRunning(true);
    // Its own socket, never retried: a broken connection ends the answer with an error instead of
    // sending the prompt again (billed again) on reconnecting.
    stop.current = subscribeOnce<{
      chatCompletionStream: {
        choices: { delta: { content?: string | null; reasoningContent?: string | null }; finishReason?: FinishReason | null }[];
        usage?: { promptTokens: number; completionTokens: number; totalTokens: number } | null;
      };
    }>(
      { query: stringifyDocument(StreamDoc), variables: { input: { model: chosen.id, messages: [{ role: 'user', content: prompt }] } } },
      {
        next: (r) => {
          if (r.errors?.length) setStreamError(r.errors.map((x) => x.message).join(' '));
          const chunk = r.data?.chatCompletionStream;
          if (!chunk) return;
          const thought = chunk.choices.map((c) => c.delta.reasoningContent ?? '').join('');
          if (thought) setReasoning((a) => a + thought);
          const text = chunk.choices.map((c) => c.delta.content ?? '').join('');
          if (text) setAnswer((a) => a + text);
          const reason = chunk.choices.find((c) => c.finishReason)?.finishReason;
          if (reason) setFinish(reason);
          if (chunk.usage) setUsage(chunk.usage);
        },
        error: (err) => {
          setStreamError(
            Array.isArray(err)
              ? err.map((x: { message: string }) => x.message).join(' ')
              : err instanceof Error
                ? err.message
                : 'The stream failed.',
          );
          setRunning(false);
        },
        complete: () => setRunning(false),
      },
    );
  };
  if (fetching && !data) return <Loading what="models" />;
  if (!data && error) return <ErrorMessage error={error} onRetry={() => refetchModels({ requestPolicy: 'network-only' })} />;
  return (
    <>
      <h1>Playground</h1>
      {models.length === 0 ? (
        <Empty>No chat model is available now.</Empty>
      ) : (
        <form className="card" onSubmit={run}>
          <div className="field">
            <label htmlFor="pg-model">Model</label>
            <select id="pg-model" value={chosen?.id} onChange={(e) => setModel(e.target.value)}>
              {models.map((m) => (
                <option key={m.id}>{m.id}</option>
              ))}
            </select>
          </div>
          <div className="field">
            <label htmlFor="pg-prompt">Prompt</label>
            <textarea id="pg-prompt" rows={4} value={prompt} onChange={(e) => setPrompt(e.target.value)} />
          </div>
          <button type="submit" className="primary" disabled={running || !prompt.trim()}>
            Send
          </button>{' '}
          {running ? (
            <button type="button" onClick={() => (stop.current?.(), setRunning(false))}>
              Stop
            </button>
          ) : null}
        </form>
      )}
      <section className="card" aria-labelledby="answer-title" aria-busy={running}>
        <h2 id="answer-title">Answer</h2>
        {streamError ? <ErrorMessage error={streamError} title="The call failed" /> : null}
        {reasoning ? (
          <details open className="reasoning">
            <summary>Reasoning</summary>
            <p>{reasoning}</p>
          </details>
        ) : null}
        <p className="answer" aria-live="polite">
          {answer || (running ? (reasoning ? 'Reasoning…' : 'Waiting for the first token…') : 'Send a prompt to see the answer here.')}
        </p>
        {finish === 'length' ? (
          <p className="notice" role="note">
            The answer was cut short: it reached its token limit (the model's maximum output, or as many tokens as your wallet or spending
            limit could pay for).
          </p>
        ) : finish === 'content_filter' ? (
          <p className="notice" role="note">
            The answer was stopped by the content filter.
          </p>
        ) : null}
        {usage && answeredBy ? (
          <p role="status">
            {formatTokens(usage.promptTokens)} prompt + {formatTokens(usage.completionTokens)} completion tokens ={' '}
            <strong>{formatTokens(usage.totalTokens)} tokens</strong>,{' '}
            {formatMoney(
              listPriceCost(
                usage.promptTokens,
                usage.completionTokens,
                answeredBy.pricing.inputPricePerMillion ?? 0,
                answeredBy.pricing.outputPricePerMillion ?? 0,
              ),
              { currency: 'USD' },
            )}{' '}
            at list prices for {answeredBy.id} (the monthly allocation is used first).
          </p>
        ) : null}
      </section>
    </>
  );
}
