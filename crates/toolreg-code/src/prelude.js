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

  // Taken now, so a program that replaces them breaks only its own code.
  const { parse, stringify } = JSON;
  const apply = Reflect.apply;
  const { isWellFormed, toWellFormed } = String.prototype;
  const wellFormed = (text) => apply(isWellFormed, text, []);

  const waiting = new Map();
  const invoke = (tool, args) => {
    let text;
    try {
      text = stringify(args === undefined ? {} : args);
    } catch (e) {
      return Promise.reject(new TypeError(`the arguments of ${tool} are not JSON: ${e.message}`));
    }
    if (text === undefined) {
      return Promise.reject(new TypeError(`the arguments of ${tool} are not JSON`));
    }
    // A lone surrogate (half a UTF-16 pair) is not Unicode: JSON carries it
    // as an escape no other side accepts. It shows as `\ud8..`-`\udf..` in
    // the text (whole pairs stay literal); only then look for it exactly.
    if (text.includes("\\ud")) {
      const check = (key, value) => {
        if (!wellFormed(key) || (typeof value === "string" && !wellFormed(value))) {
          throw new TypeError(
            `the arguments of ${tool} hold a lone surrogate (half of a UTF-16 pair), which is not valid Unicode`,
          );
        }
        return value;
      };
      try {
        stringify(args, check);
      } catch (e) {
        return Promise.reject(e);
      }
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
  // Printed text is for reading: a lone surrogate becomes U+FFFD rather
  // than failing the print.
  const log = (...items) => print(apply(toWellFormed, items.map(show).join(" "), []) + "\n");
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
  // Else `new (new Date(0).constructor)()` reaches the real one, and the clock.
  Object.defineProperty(RealDate.prototype, "constructor", { value: SandboxDate });
  // A fixed seed: `Math.random` works, and a replayed run draws the same numbers.
  let seed = 0x2545f491;
  Math.random = () => {
    seed ^= seed << 13;
    seed ^= seed >>> 17;
    seed ^= seed << 5;
    return (seed >>> 0) / 4294967296;
  };

  // `Function("…")` compiles code from a string, as `eval` does (the
  // interpreter keeps `eval` for the worker's own use). The global stays,
  // for `typeof` and `instanceof Function`.
  const noEval = () => {
    throw new EvalError("code from strings is not allowed in the sandbox: write it in the program itself");
  };
  const SandboxFunction = new Proxy(Function, { apply: noEval, construct: noEval });

  const globals = { tools, ToolError, console, print: log, Date: SandboxDate, Function: SandboxFunction };
  for (const [name, value] of Object.entries(globals)) {
    Object.defineProperty(globalThis, name, { value, writable: false, configurable: false, enumerable: false });
  }
  delete globalThis.eval;
  // QuickJS's copy of V8's stack-trace API hands `prepareStackTrace` the
  // functions on the stack, this prelude's among them (`invoke`, `settle`):
  // the program must not hold the sandbox's own plumbing. Stacks stay text.
  Object.defineProperty(Error, "prepareStackTrace", { value: undefined, writable: false, configurable: false });
  for (const f of [function () {}, async function () {}, function* () {}, async function* () {}]) {
    Object.defineProperty(Object.getPrototypeOf(f), "constructor", { value: undefined });
  }

  return (id, ok, payload) => {
    const entry = waiting.get(id);
    if (entry === undefined) return;
    waiting.delete(id);
    if (ok) {
      let value;
      try {
        value = parse(payload);
      } catch (e) {
        // Too deep for the interpreter's stack (or too large for its
        // heap): this call fails, not the whole program.
        const why = e instanceof RangeError ? "it is nested too deeply" : `${e && e.message}`;
        entry.reject(new ToolError(entry.tool, "result_serialization", `the result of ${entry.tool} cannot be used here: ${why}`));
        return;
      }
      entry.resolve(value);
    } else {
      const error = parse(payload);
      entry.reject(new ToolError(entry.tool, error.kind, error.message));
    }
  };
})
