//! # hlo — XLA HLO: IR, text parser and printer
//!
//! The IR every later part of hloc works on, and the text format XLA and JAX dump.
//!
//! ```
//! let text = r#"
//! HloModule m
//!
//! ENTRY %main (p: f32[4]) -> f32[4] {
//!   %p = f32[4]{0} parameter(0)
//!   ROOT %n = f32[4]{0} negate(f32[4]{0} %p), metadata={op_name="jit(f)/neg"}
//! }
//! "#;
//! let module = hlo::parse_module(text).unwrap();
//! let entry = module.entry();
//! let root = entry.root_instr();
//! assert_eq!(root.opcode(), hlo::Opcode::Negate);
//! assert_eq!(root.shape().dims(), &[4]);
//! assert_eq!(root.metadata().and_then(|m| m.op_name()), Some("jit(f)/neg"));
//! assert_eq!(entry.users(entry.parameter(0).unwrap()), &[entry.root()]);
//! // Printing gives XLA's text back.
//! assert_eq!(hlo::print_module(&module).trim_end(), text.trim());
//! ```
//!
//! ## Structure
//!
//! - [`ir`] — [`Module`] (name, header attributes, stack frame tables, computations, entry)
//!   owns [`Computation`]s (an arena of [`Instruction`]s indexed by [`InstrId`], a text
//!   order, parameters, root), referred to by [`CompId`]. Instructions hold a name, an
//!   [`Opcode`], a [`Shape`], operand ids, their users (maintained), attributes and a
//!   payload (`parameter(N)`, `constant(...)`). Typed accessors ([`ir::accessors`]) read
//!   `dimensions`, `slice`, `window`, dot/gather/scatter/convolution dimension numbers,
//!   comparison direction and type, fusion kind, called computations, metadata, ...
//! - [`shape`] — [`Shape`] (arrays with element type, dimensions, bounded (`<=N`) and
//!   unbounded (`?`) dynamic dimensions and an optional [`Layout`] with every XLA layout
//!   suffix; nested tuples), [`ElementType`] (every type XLA prints).
//! - [`literal`] — [`Literal`] values stored compactly (one typed vector per literal; a
//!   scalar written for a non-scalar shape is stored once, [`literal::ArrayLiteral::splat`]).
//! - [`attrs`] — attribute names, typed values ([`AttrValue`]) and the per-opcode schema.
//! - [`parser`] — [`parse_module`], [`parse_module_with`] (file name for messages, depth
//!   limit, warnings), [`parse_shape`].
//! - [`printer`] — [`print_module`], [`print_module_with`], [`PrintOptions`]; `Display` for
//!   modules, shapes, layouts, literals and attribute values;
//!   [`Module::instruction_to_string`] for one instruction.
//!
//! ## What the parser accepts
//!
//! The text `HloModule::ToString()` prints and JAX's `as_hlo_text()`: with or without `%`
//! sigils, with or without operand shapes, signatures and layouts; `/*index=N*/` and `//`
//! comments (ended by `\n` or a lone `\r`); the `HloModule` line (a `:` after the name is
//! allowed) with any attributes (`entry_computation_layout`, `is_scheduled`,
//! `replica_count`, `num_partitions` typed; `input_output_alias` and `buffer_donor`
//! checked and kept as written; others verbatim); the
//! `FileNames`/`FunctionNames`/`FileLocations`/`StackFrames` tables; `ENTRY`, `ROOT` (when
//! no `ROOT` is written, the last instruction is the root), `execution_thread=`; every
//! opcode of XLA's `hlo_opcode.h` with its attributes; the short async forms
//! (`custom-call-start`, `all-to-all-start`/`-update`/`-done`, for any opcode without its
//! own such opcode, with any number of `-update` steps and `async_execution_thread=`)
//! which become `async-start`/`async-update`/`async-done` with a generated wrapped
//! computation running on that thread (legacy pairs such as `copy-start`/`copy-done`,
//! `all-reduce-start`, `collective-permute-start`, `send`/`recv` stay first-class, and
//! `copy-update`, `send-start`, ... are errors); late binding (a start binding some or
//! none of its computation's operands, each update binding the next ones, the short
//! forms' generated computation padded with placeholder parameters and resynchronized by
//! each update; the chain followed through tuples, copies, barriers, metadata custom
//! calls and loops, and accepted when it cannot be followed);
//! inline computations (`to_apply={...}`); replica groups as lists, iota
//! (`[2,4]<=[8]T(1,0)`) or mesh axes (`mesh['x'=2,'y'=4] {'y'}`, kept and printed back).
//!
//! As XLA does, an instruction may leave out its result shape where the operands decide it
//! (`ROOT s = add(a, b)`, `dot`, `tuple`, `get-tuple-element`, `conditional`, ...: XLA's
//! shape inference, [`verifier::infer_shape`]); an operand may be an instruction written
//! in place (`add(f32[10] parameter(0), multiply(...))`), which becomes an instruction of
//! its own named `<opcode>.anon` (`.anon.1`, ...) before its user; an operand may select
//! a tuple element, as current XLA prints them (`%arg_tuple.1#0`, `%p0#1#0`, also without
//! `%`): each `#N` takes element N of the value selected so far and becomes a
//! `get-tuple-element` of the current computation, made just before the path's first user
//! and shared by every later use of the same path in that computation (`%p#1#0` reuses the
//! one of `%p#1`). It is named after the path with `#` replaced by `_` (`p0_1`,
//! `p0_1_0`); written names win: when an instruction or computation of the module has that
//! name, wherever it is written (later in the text too), the generated one takes the
//! usual fresh suffix (`p0_1.1`, [`ir::edit::NameGen`]). A shape written before such an
//! operand (`f32[4] %p#0`) is checked against the element's; `#N` on a value that is not
//! a tuple, an index out of range, or a `#` not directly followed by digits is an error.
//! Only operand lists take this form (not `control-predecessors=`). A `broadcast` of a
//! scalar may leave out `dimensions={}`. A text that is one instruction
//! (`%m = f32[2] multiply(f32[2] %x, f32[2] %y)`, or without the name) is a module whose
//! entry computation has the instruction's operands as parameters. An instruction name
//! used again in a later computation is renamed (`p0.1`), as XLA's parser does. An
//! attribute the parser does not know is kept verbatim and printed back, with a warning;
//! a known attribute on an opcode that does not take it is an error (`unexpected
//! attribute "calls"`). Literals of every element type: nested arrays (with XLA's
//! `/*iN=M*/` comments), tuples, `true`/`false`, decimal and `0x` integers (a negative
//! `u64` wraps around, as in XLA; other types are range-checked), `inf`, `-inf`, `nan`,
//! `-nan`, `nan(0x...)` payloads, complex `(re, im)`, and `{...}`; and, as XLA's parser
//! allows, one scalar value for an array shape (`bf16[17,22] constant(1)`, also inside
//! tuple literals and custom-call `literal=`): every element has that value, stored once
//! whatever the shape's size. `scan(inputs..., inits...), dimensions={d},
//! num_carries=N, to_apply=body` with optional `is_reverse=` and `is_associative=` is
//! parsed like every opcode, its result shape inferred when not written.
//!
//! `sharding={...}` is read into a typed [`sharding::Sharding`] (and printed back as
//! written). Rejected as XLA rejects them: malformed `input_output_alias`/`buffer_donor`,
//! malformed shardings (a device list or iota without one device per tile, unknown
//! attributes, axes not in the mesh), unknown or
//! unspecified custom-call `api_version`s, `result_accuracy` other than `{mode=...}` or
//! `{tolerance={rtol=, atol=, ulps=}}`, an async step on another thread or computation
//! than its chain, an async-done as a chain's state, dimension level types other than
//! `D`/`C`/`S`/`H`, a physical shape `P(...)` on a dense layout, tile dimensions that are
//! not positive, `parameter_replication` with the wrong number of leaves, malformed
//! `debug_attributes` in the header, iota replica groups whose iota holds another number
//! of devices than the groups, unknown dot/convolution `algorithm=`s, bare instruction
//! names spelled like element types (`s2`, `u4`; XLA's lexer reads them as types).
//!
//! Errors ([`ParseError`]) give `file:line:col: message`, the source line and a caret.
//! No input makes the parser panic, recurse deeper than [`ParseOptions::max_depth`]
//! (nested operands count), or allocate much more than the size of its input (values are
//! stored as they are read, `{...}` literals store nothing, a scalar for an array shape
//! stores its one value, and a shape whose element count or byte size overflows an `i64`
//! is an error).
//!
//! Deliberate limits: opcodes whose result is part of the operation (`parameter`,
//! `constant`, `reshape`, `broadcast`, `convert`, `custom-call`, `iota`, the async starts,
//! ...) need their result shape written; operands and called computations must be defined
//! before use (as XLA requires); buffer shapes `b(...)` are not accepted; a sharding
//! with an open dimension (`{?}` in the named-mesh form) is an error.
//!
//! ## Printer normalizations
//!
//! Printing a module XLA printed gives the same text, byte for byte, for every file of the
//! JAX corpus. In general the printer makes these normalizations:
//!
//! - **Conventions** — `%` sigils, operand shapes, `/*index=N*/` operand comments and
//!   computation signatures follow the first occurrence of each in the parsed text
//!   ([`Module::source_style`]): XLA's compiled dumps use sigils without operand shapes,
//!   JAX's `as_hlo_text()` neither, `HloModule::ToString()` both. A module built in code
//!   prints with sigils and operand shapes ([`PrintOptions::default`]).
//! - **Layout of the text** — comments and whitespace are not kept: one instruction per
//!   line indented by two spaces, a blank line after the header, the stack frame tables
//!   and each computation, as XLA prints them. `/*index=N*/` comments are regenerated in
//!   tuple shapes and operand lists.
//! - **Signatures** are computed: parameters in parameter-number order, named without `%`,
//!   shapes without layouts, and the root's shape.
//! - **Missing header or entry** — text without an `HloModule` line gets
//!   `HloModule module_<entry>`; without `ENTRY`, the last computation is marked entry.
//! - **Numbers** — literal values print in XLA's shortest round-trip form (f32 `%.6g` or
//!   `%.9g`, f64 `%.15g` or `%.17g`, small floats `%.<max_digits10>g`), after rounding to
//!   the element type (`f16 0.1` prints `0.099976`); `0x` integers print in decimal; `pred`
//!   arrays print `0`/`1` and scalars `true`/`false`; `-0` keeps its sign. `epsilon=` prints
//!   with six significant digits.
//! - **Constants** print every value they hold (XLA elides arrays over ten elements unless
//!   asked; elided `{...}` stays elided). A constant written as one scalar for an array
//!   shape prints every element when it has at most ten (as XLA prints the constant its
//!   parser built: `f32[2] constant(1)` prints `constant({1, 1})`), and its one value
//!   otherwise (`bf16[17,22] constant(1)` prints back as written, where XLA prints
//!   `{...}` or, asked for large constants, all 374 values).
//! - **Attribute values** print in XLA's canonical form: slice strides on every dimension
//!   when any stride is not 1 and on none otherwise; pad interior padding likewise; window
//!   fields in XLA's order with default fields omitted; layout suffixes in XLA's order
//!   with default values omitted; strings re-escaped as `absl::CEscape` does (bytes
//!   outside printable ASCII as octal). Attributes keep the order they were written in;
//!   verbatim values (unknown module attributes, `sharding`, dictionaries) are printed as read.
//! - **Async** — an `async-start` whose wrapped computation is one instruction over its
//!   parameters, with the start's operand shapes, called by that chain only, prints in
//!   the short form (`reduce-scatter-start(...)`, `-update`, `-done`, with the wrapped
//!   instruction's attributes) and the wrapped computation is not printed; this holds also
//!   when the input spelled it `async-start(...), calls=%c`, as XLA does. In the long form,
//!   `async-update`/`async-done` always print `calls=` (and not the wrapped op's
//!   attributes a short step repeated). A short chain binding late (its updates bind
//!   operands) prints in the long form with its generated computation.
//! - **Inline computations** (`to_apply={...}`) become named computations (`_`, `_.1`,
//!   ...) printed before their caller; generated computations get unique names.
//! - **Tuple-element operands** (`%p#1#0`) print as the explicit `get-tuple-element`
//!   instructions the parser made for them (`%p_1 = ... get-tuple-element(%p), index=1`,
//!   then `%p_1_0`), each before the first user of its path, and the users name them.
//!
//! ## Verifier
//!
//! [`verifier::verify`] checks a module and returns every error found, each a
//! [`verifier::VerifyError`] naming its computation and instruction;
//! [`verifier::verify_parsed`] adds the line and column from the parser's
//! [`parser::SourceMap`] (`Parsed::source_map`: the byte offset of every instruction).
//! Checks: unique computation and instruction names (module-wide), operands and control
//! predecessors live and defined before use, no cycles, parameters dense and in the
//! parameter list, a live root, `entry_computation_layout` against the entry's signature,
//! layouts that are permutations of their dimensions, and for every instruction the shape
//! XLA's rules give ([`verifier::infer_shape`]) against the declared one. Shapes compare as
//! XLA's `ShapeUtil::Compatible` does: element type and dimensions, layouts ignored, a
//! bounded dynamic dimension equal to its bound. Opcodes whose result is part of their
//! specification (`reshape`, `broadcast`, `convert`, `bitcast`, `custom-call`, `iota`,
//! the preferred element type of `dot`/`convolution`) are checked for consistency
//! (element counts, byte sizes, dimension maps, "not narrower") instead. Called
//! computations are checked against their callers: reducers take `2N` scalars and return
//! N accumulators (reduce, reduce-window, scatter, all-reduce), comparators return `pred[]`,
//! `while` body and condition, `conditional` branches, `call`/`fusion`/`map`/`async-start`
//! parameters and results. Async chains: `async-start`/`-update` have exactly one user
//! (the next step, same `calls=`), `async-done` takes a start or update, the start runs on
//! the thread its wrapped computation runs on, and an op with its own `-start`/`-done`
//! pair is not wrapped. Also checked as XLA checks them: custom-call
//! `operand_layout_constraints` (one compatible shape per operand), `branch_computations`
//! only on an `s32` conditional, `dynamic-reshape` keeping the element count (at the
//! bounds) with `s32` sizes, `iota` of a number type along a non-negative dimension, and
//! the legacy pairs (`copy-start`, `all-reduce-start`, `all-gather-start`,
//! `collective-permute-start`): a start has exactly one user, its `-done`, which takes it.
//! `scan(inputs..., inits...)` (XLA's scan: the last `num_carries` operands are the
//! initial carries, default 0): at least one input, every input an array with the same
//! size L along the one dimension `d` of `dimensions={d}`; the body (`to_apply`) takes
//! each input's slice (dimension `d` removed) then the carries, and returns
//! `(outputs..., carries...)` with the carries of their initial shapes; the result is
//! `(outputs stacked along a new dimension d of size L..., carries...)`, or the one value
//! when the body returns a non-tuple. `shuffle` is not inferred ([`verifier::infer_shape`]
//! returns an `unsupported` error; the verifier accepts its declared shape).
//! [`verifier::VerifyOptions::layout_sensitive`] adds XLA's post-layout-assignment checks:
//! every array has a layout and the same buffer seen in two places (loop state, called
//! computations' parameters and roots, tuple elements, the entry computation layout) has
//! the same one.
//!
//! ## Graph export
//!
//! [`graph::Graph::of_module`] builds the dataflow graph: nodes are
//! instructions (name, opcode, shape, `op_name`, source `file:line` from metadata or the
//! stack frame tables), edges operand uses with their index, computations clusters nested
//! under their first caller. [`graph::to_json`] writes the documented `hloc-graph-1`
//! schema, [`graph::to_dot`] Graphviz with `subgraph cluster_N`; both deterministic.

pub mod attrs;
pub mod collective_groups;
mod error;
pub mod graph;
pub mod ir;
pub mod literal;
mod opcode;
pub mod parser;
pub mod pass;
pub mod printer;
pub mod ragged_dot;
pub mod sdy;
pub mod shape;
pub mod sharding;
mod sharding_named;
mod sharding_print;
mod sharding_text;
mod sharding_tiles;
mod sharding_types;
mod sharding_verify;
pub mod source_map;
mod text;
pub mod trip_count;
pub mod verifier;

pub use attrs::{AttrName, AttrValue, Attribute};
pub use error::{Location, ParseError, ParseWarning};
pub use ir::{CompId, Computation, InstrId, InstrRef, Instruction, Module};
pub use literal::Literal;
pub use opcode::{Opcode, UnknownOpcode};
pub use parser::{parse_module, parse_module_with, parse_shape, ParseOptions, Parsed};
pub use printer::{print_module, print_module_with, PrintOptions};
pub use shape::{ElementType, Layout, Shape};
