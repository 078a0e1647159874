// The official OpenAI Node SDK against a running llmserve (see
// scripts/sdk-openai-check.sh): structured outputs with response_format
// json_schema, tools with tool_choice "required", and a streamed tool call
// assembled from its deltas twice — by hand and by the SDK's own stream helper.
// Every check is a value test; the process exits 1 on the first failure.
//   LLMSERVE_URL=http://127.0.0.1:PORT/v1 node openai_sdk_check.mjs
import OpenAI from "openai";
import assert from "node:assert/strict";
import { runChecks } from "./run_checks.mjs";

const client = new OpenAI({ baseURL: process.env.LLMSERVE_URL, apiKey: "unused", maxRetries: 0 });
const messages = [{ role: "user", content: "What is the weather in Paris?" }];

const person = {
  type: "object",
  properties: {
    name: { type: "string", minLength: 1, maxLength: 8 },
    age: { type: "integer", minimum: 0, maximum: 120 },
    pet: { enum: ["cat", "dog", null] },
  },
  required: ["name", "age", "pet"],
  additionalProperties: false,
};

const weather = {
  type: "object",
  properties: {
    city: { type: "string", minLength: 1, maxLength: 12 },
    days: { type: "integer", minimum: 1, maximum: 7 },
  },
  required: ["city", "days"],
  additionalProperties: false,
};
const tools = [
  { type: "function", function: { name: "get_weather", description: "Weather forecast", parameters: weather } },
  { type: "function", function: { name: "get_time", parameters: { type: "object", properties: {}, additionalProperties: false } } },
];

// Hand-written checks of the two schemas above (not a general validator).
function checkPerson(v) {
  assert.deepEqual(Object.keys(v).sort(), ["age", "name", "pet"]);
  assert.equal(typeof v.name, "string");
  assert.ok([...v.name].length >= 1 && [...v.name].length <= 8, `name length: ${v.name}`);
  assert.ok(Number.isInteger(v.age) && v.age >= 0 && v.age <= 120, `age: ${v.age}`);
  assert.ok(["cat", "dog", null].includes(v.pet), `pet: ${v.pet}`);
}
function checkCall(name, args) {
  if (name === "get_time") {
    assert.deepEqual(args, {});
    return;
  }
  assert.equal(name, "get_weather");
  assert.deepEqual(Object.keys(args).sort(), ["city", "days"]);
  assert.ok(typeof args.city === "string" && [...args.city].length >= 1 && [...args.city].length <= 12, `city: ${args.city}`);
  assert.ok(Number.isInteger(args.days) && args.days >= 1 && args.days <= 7, `days: ${args.days}`);
}

// max_tokens 64: the JSON grammar's whitespace is bounded (docs/api.md), so a weak
// model's answer ends well within it.
async function jsonSchema() {
  for (const seed of [1, 2, 3, 4, 5]) {
    const r = await client.chat.completions.create({
      model: "stories260K", messages, temperature: 1, seed, max_tokens: 64,
      response_format: { type: "json_schema", json_schema: { name: "person", schema: person, strict: true } },
    });
    assert.equal(r.choices[0].finish_reason, "stop");
    checkPerson(JSON.parse(r.choices[0].message.content));
  }
  return "response_format json_schema (max_tokens 64): 5 answers parse and match the schema";
}

async function requiredTool() {
  for (const seed of [1, 2, 3]) {
    const r = await client.chat.completions.create({
      model: "stories260K", messages, tools, tool_choice: "required", parallel_tool_calls: false,
      temperature: 1, seed, max_tokens: 300,
    });
    const c = r.choices[0];
    assert.equal(c.finish_reason, "tool_calls");
    assert.equal(c.message.tool_calls.length, 1);
    const call = c.message.tool_calls[0];
    assert.equal(call.type, "function");
    assert.ok(call.id.length > 0);
    checkCall(call.function.name, JSON.parse(call.function.arguments));
  }
  return "tool_choice required: 3 answers with one parsed call each, valid arguments";
}

async function streamedTool() {
  const request = {
    model: "stories260K", messages, tools, tool_choice: { type: "function", function: { name: "get_weather" } },
    parallel_tool_calls: false, temperature: 1, seed: 7, max_tokens: 300,
  };
  // By hand: the first delta of a call carries id, type and name; the rest append.
  const stream = await client.chat.completions.create({ ...request, stream: true });
  const calls = [];
  let finish = null;
  let pieces = 0;
  for await (const chunk of stream) {
    for (const choice of chunk.choices) {
      if (choice.finish_reason) finish = choice.finish_reason;
      for (const d of choice.delta.tool_calls ?? []) {
        if (d.id) calls[d.index] = { id: d.id, name: d.function.name, arguments: d.function.arguments ?? "" };
        else calls[d.index].arguments += d.function.arguments;
        ++pieces;
      }
    }
  }
  assert.equal(finish, "tool_calls");
  assert.equal(calls.length, 1);
  assert.ok(pieces > 2, `the call came in ${pieces} deltas`);
  checkCall(calls[0].name, JSON.parse(calls[0].arguments));
  // The SDK's stream helper assembles the same call.
  const helper = client.chat.completions.stream(request);
  const final = await helper.finalChatCompletion();
  const sdkCall = final.choices[0].message.tool_calls[0];
  assert.equal(sdkCall.function.name, calls[0].name);
  assert.deepEqual(JSON.parse(sdkCall.function.arguments), JSON.parse(calls[0].arguments));
  return `streamed tool call: ${pieces} deltas assemble into a valid call, as the SDK's stream helper assembles it`;
}

await runChecks([jsonSchema, requiredTool, streamedTool]);
