// Runs once before the program, in strict mode. It receives the host's
// functions and the tool names, puts the program's globals in place, takes
// away what would make a run depend on anything but its tools' results (the
// clock, randomness, code from strings), and returns `settle`, which only
// the worker holds (the program cannot answer its own calls), and
// `natives`.
(function (call, encode, print, toolNames) {
  "use strict";

  // The built-ins the worker reads the program's values with (see
  // `worker/data.rs`, which reads this list by position), taken before the
  // program runs: what it does to the globals afterwards changes none of
  // them. Arguments, the result and printed values are read from the
  // interpreter's memory, never with `JSON.stringify` or `toString`, which
  // the program could replace.
  const natives = Object.freeze([
    Object.getOwnPropertyDescriptor,
    Object.hasOwn,
    String.prototype.slice,
    String.prototype.toWellFormed,
    (text) => text.length,
    Object.freeze([
      String.prototype,
      Number.prototype,
      Boolean.prototype,
      Symbol.prototype,
      BigInt.prototype,
      Date.prototype,
      RegExp.prototype,
      Map.prototype,
      Set.prototype,
      WeakMap.prototype,
      WeakSet.prototype,
      Promise.prototype,
      Error.prototype,
      ArrayBuffer.prototype,
      Object.getPrototypeOf(Uint8Array.prototype),
      Function.prototype,
    ]),
    // An error's stack trace is kept inside it and read by this getter.
    Object.getOwnPropertyDescriptor(Error.prototype, "stack").get,
  ]);

  class ToolError extends Error {
    constructor(tool, kind, message) {
      super(message);
      this.name = "ToolError";
      this.tool = tool;
      this.kind = kind;
    }
  }

  // Taken now, so a program that replaces them breaks only its own code.
  const { parse } = JSON;
  const apply = Reflect.apply;
  const RealPromise = Promise;
  const promiseReject = Promise.reject;
  const reject = (error) => apply(promiseReject, RealPromise, [error]);
  const { get: mapGet, set: mapSet, delete: mapDelete } = Map.prototype;

  const waiting = new Map();
  const invoke = (tool, args) => {
    let text;
    try {
      text = encode(natives, tool, args === undefined ? {} : args);
    } catch (e) {
      return reject(e);
    }
    const id = call(tool, text);
    return new RealPromise((resolve, reject) => apply(mapSet, waiting, [id, { resolve, reject, tool }]));
  };

  const tools = Object.create(null);
  for (const name of JSON.parse(toolNames)) {
    Object.defineProperty(tools, name, { value: (args) => invoke(name, args), enumerable: true });
  }
  Object.freeze(tools);

  // The items go as they are, in the array the call made: spreading them
  // would ask the program's array iterator.
  const log = (...items) => print(natives, items);
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

  const settle = (id, ok, payload) => {
    const entry = apply(mapGet, waiting, [id]);
    if (entry === undefined) return;
    apply(mapDelete, waiting, [id]);
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
  return [settle, natives];
})
