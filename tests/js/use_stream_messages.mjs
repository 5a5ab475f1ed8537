// Streams one run through LangGraph's JS SDK and merges the messages-tuple events with the
// SDK's own MessageTupleManager (what useStream shows: chunks merged by message id). Prints
// the merged messages, in order, as one JSON line.
// Usage: node use_stream_messages.mjs URL AGENT_ID MESSAGE
import { Client } from "@langchain/langgraph-sdk";
import { MessageTupleManager } from "@langchain/langgraph-sdk/ui";

const [url, agentId, text] = process.argv.slice(2);
const client = new Client({ apiUrl: url });
const thread = await client.threads.create();
const manager = new MessageTupleManager();
const order = [];
const stream = client.runs.stream(thread.thread_id, "memgpt", {
  input: { messages: [{ role: "user", content: text }] },
  context: { agent_id: agentId },
  streamMode: ["messages-tuple"],
});
for await (const event of stream) {
  if (event.event !== "messages") continue;
  const [message, metadata] = event.data;
  const id = manager.add(message, metadata);
  if (id && !order.includes(id)) order.push(id);
}
manager.flush();
const shown = order.map((id) => {
  const chunk = manager.get(id).chunk;
  return { id, type: chunk.getType(), content: chunk.content };
});
const state = await client.threads.getState(thread.thread_id);
const messages = state.values.messages;
console.log(JSON.stringify({ shown, last: messages[messages.length - 1] }));
