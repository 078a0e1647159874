// The official SDKs against a running llmserve (see scripts/sdk-openai-check.sh) on the
// endpoints beyond chat: OpenAI's embeddings.create (float and the SDK's default
// base64), responses.create (plain, json_schema, a function tool round trip),
// responses.stream, chat with continue_final_message, and Anthropic's messages.create
// and messages.stream with a tool call. Every check is a value test; the process exits
// 1 if any fails.
//   LLMSERVE_URL=http://127.0.0.1:PORT/v1 node client_apis_check.mjs
import OpenAI from "openai";
import Anthropic from "@anthropic-ai/sdk";
import assert from "node:assert/strict";
import { runChecks } from "./run_checks.mjs";

const base = process.env.LLMSERVE_URL;
const client = new OpenAI({ baseURL: base, apiKey: "unused", maxRetries: 0 });
const anthropic = new Anthropic({ baseURL: base.replace(/\/v1$/, ""), apiKey: "unused", maxRetries: 0 });
const model = "stories260K";
const weather = {
  type: "object",
  properties: { city: { type: "string", minLength: 1, maxLength: 12 } },
  required: ["city"],
  additionalProperties: false,
};

async function embeddings() {
  const input = ["Once upon a time", "The cat sat on the mat."];
  const floats = await client.embeddings.create({ model, input, encoding_format: "float" });
  const b64 = await client.embeddings.create({ model, input });  // the SDK asks for base64 and decodes it
  assert.equal(floats.data.length, 2);
  for (const [i, d] of floats.data.entries()) {
    assert.equal(d.index, i);
    const norm = Math.sqrt(d.embedding.reduce((s, x) => s + x * x, 0));
    assert.ok(Math.abs(norm - 1) < 1e-5, `norm ${norm}`);
    assert.deepEqual(Array.from(b64.data[i].embedding, (x) => Math.fround(x)), d.embedding.map((x) => Math.fround(x)));
  }
  assert.ok(floats.usage.prompt_tokens > 0);
  return `embeddings.create: 2 unit vectors of ${floats.data[0].embedding.length}, base64 decodes to the floats`;
}

async function responsesPlain() {
  const r = await client.responses.create({ model, input: "Once upon a time", max_output_tokens: 12, temperature: 0 });
  const chat = await client.chat.completions.create({
    model, messages: [{ role: "user", content: "Once upon a time" }], max_tokens: 12, temperature: 0,
  });
  assert.equal(r.object, "response");
  assert.equal(r.output_text, chat.choices[0].message.content);
  assert.equal(r.usage.input_tokens, chat.usage.prompt_tokens);
  return `responses.create: "${r.output_text}" (the chat answer), status ${r.status}`;
}

async function responsesSchema() {
  const r = await client.responses.create({
    model, input: "A city?", max_output_tokens: 64,
    text: { format: { type: "json_schema", name: "city", schema: weather, strict: true } },
  });
  const v = JSON.parse(r.output_text);
  assert.deepEqual(Object.keys(v), ["city"]);
  assert.ok(v.city.length >= 1 && v.city.length <= 12);
  return `responses.create json_schema: ${r.output_text}`;
}

async function responsesTools() {
  const tools = [{ type: "function", name: "get_weather", description: "Weather", parameters: weather, strict: true }];
  const input = [{ role: "user", content: "Weather in Paris?" }];
  const first = await client.responses.create({ model, input, tools, tool_choice: "required", parallel_tool_calls: false, max_output_tokens: 200 });
  const call = first.output.find((o) => o.type === "function_call");
  assert.ok(call, JSON.stringify(first.output));
  assert.equal(call.name, "get_weather");
  JSON.parse(call.arguments);
  const second = await client.responses.create({
    model, tools, max_output_tokens: 8,
    input: [...input, call, { type: "function_call_output", call_id: call.call_id, output: "Sunny" }],
  });
  assert.equal(second.object, "response");
  return `responses function tool round trip: ${call.name}(${call.arguments}), then "${second.output_text}"`;
}

async function responsesStream() {
  const stream = client.responses.stream({ model, input: "Once upon a time", max_output_tokens: 12, temperature: 0 });
  let deltas = "";
  const types = new Set();
  stream.on("response.output_text.delta", (e) => { deltas += e.delta; });
  for await (const e of stream) types.add(e.type);
  const final = await stream.finalResponse();
  assert.equal(final.output_text, deltas);
  for (const t of ["response.created", "response.output_item.added", "response.output_text.done"]) assert.ok(types.has(t), t);
  return `responses.stream: ${types.size} event types, the deltas make "${deltas}"`;
}

async function continueFinal() {
  const prefill = "Once upon a time, there was a";
  const r = await client.chat.completions.create({
    model, max_tokens: 8, temperature: 0, continue_final_message: true,
    messages: [{ role: "user", content: "A story." }, { role: "assistant", content: prefill }],
  });
  const c = await client.completions.create({ model, prompt: `A story.\n\n${prefill}`, max_tokens: 8, temperature: 0 });
  assert.equal(r.choices[0].message.content, c.choices[0].text);
  return `chat continue_final_message: "${prefill}" + "${r.choices[0].message.content}"`;
}

async function anthropicTool() {
  const request = {
    model, max_tokens: 200, temperature: 0,
    messages: [{ role: "user", content: "Weather in Paris?" }],
    tools: [{ name: "get_weather", description: "Weather", input_schema: weather }],
    tool_choice: { type: "any", disable_parallel_tool_use: true },
  };
  const m = await anthropic.messages.create(request);
  assert.equal(m.stop_reason, "tool_use");
  const use = m.content.find((b) => b.type === "tool_use");
  assert.equal(use.name, "get_weather");
  const events = [];
  const stream = anthropic.messages.stream(request);
  for await (const e of stream) events.push(e.type);
  const final = await stream.finalMessage();
  assert.deepEqual(final.content.find((b) => b.type === "tool_use").input, use.input);
  assert.equal(events[0], "message_start");
  assert.equal(events.at(-1), "message_stop");
  assert.ok(events.includes("content_block_delta"));
  return `anthropic messages: tool_use ${JSON.stringify(use.input)}, streamed as ${events.length} events to the same input`;
}

await runChecks([embeddings, responsesPlain, responsesSchema, responsesTools, responsesStream, continueFinal,
  anthropicTool]);
