// Streams one run through LangGraph's JS SDK the way a chat UI does (messages-tuple) and
// prints every event as one JSON line with the milliseconds since the run started.
// Usage: node stream_reply.mjs URL AGENT_ID MESSAGE
import { Client } from "@langchain/langgraph-sdk";

const [url, agentId, text] = process.argv.slice(2);
const client = new Client({ apiUrl: url });
const thread = await client.threads.create();
const started = Date.now();
const stream = client.runs.stream(thread.thread_id, "memgpt", {
  input: { messages: [{ role: "user", content: text }] },
  context: { agent_id: agentId },
  streamMode: ["messages-tuple"],
});
for await (const event of stream) {
  console.log(JSON.stringify({ ms: Date.now() - started, event: event.event, data: event.data }));
}
