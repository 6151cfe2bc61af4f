// Runs once before the program, in strict mode. It receives the host's two
// functions and the tool names, puts the program's globals in place, takes
// away what would make a run depend on anything but its tools' results (the
// clock, randomness, code from strings), and returns `settle`, which only
// the worker holds: the program cannot answer its own calls.
(function (call, print, toolNames) {
  "use strict";

  class ToolError extends Error {
    constructor(tool, kind, message) {
      super(message);
      this.name = "ToolError";
      this.tool = tool;
      this.kind = kind;
    }
  }

  const waiting = new Map();
  const invoke = (tool, args) => {
    let text;
    try {
      text = JSON.stringify(args === undefined ? {} : args);
    } catch (e) {
      return Promise.reject(new TypeError(`the arguments of ${tool} are not JSON: ${e.message}`));
    }
    if (text === undefined) {
      return Promise.reject(new TypeError(`the arguments of ${tool} are not JSON`));
    }
    const id = call(tool, text);
    return new Promise((resolve, reject) => waiting.set(id, { resolve, reject, tool }));
  };

  const tools = Object.create(null);
  for (const name of JSON.parse(toolNames)) {
    Object.defineProperty(tools, name, { value: (args) => invoke(name, args), enumerable: true });
  }
  Object.freeze(tools);

  const show = (value) => {
    if (typeof value === "string") return value;
    try {
      const text = JSON.stringify(value);
      return text === undefined ? String(value) : text;
    } catch {
      return String(value);
    }
  };
  const log = (...items) => print(items.map(show).join(" ") + "\n");
  const console = Object.freeze({ log, info: log, warn: log, error: log, debug: log });

  const noClock = () => {
    throw new Error("there is no clock in the sandbox: get the time from a tool");
  };
  const RealDate = Date;
  RealDate.now = noClock;
  const SandboxDate = new Proxy(RealDate, {
    construct(target, args, newTarget) {
      if (args.length === 0) noClock();
      return Reflect.construct(target, args, newTarget);
    },
    apply() {
      noClock();
    },
  });
  // A fixed seed: `Math.random` works, and a replayed run draws the same numbers.
  let seed = 0x2545f491;
  Math.random = () => {
    seed ^= seed << 13;
    seed ^= seed >>> 17;
    seed ^= seed << 5;
    return (seed >>> 0) / 4294967296;
  };

  const globals = { tools, ToolError, console, print: log, Date: SandboxDate };
  for (const [name, value] of Object.entries(globals)) {
    Object.defineProperty(globalThis, name, { value, writable: false, configurable: false, enumerable: false });
  }
  delete globalThis.eval;
  for (const f of [function () {}, async function () {}, function* () {}, async function* () {}]) {
    Object.defineProperty(Object.getPrototypeOf(f), "constructor", { value: undefined });
  }

  return (id, ok, payload) => {
    const entry = waiting.get(id);
    if (entry === undefined) return;
    waiting.delete(id);
    if (ok) {
      entry.resolve(JSON.parse(payload));
    } else {
      const error = JSON.parse(payload);
      entry.reject(new ToolError(entry.tool, error.kind, error.message));
    }
  };
})
