//! The opcodes whose accesses no map describes, each with the reason (the README's table
//! lists them too).

use hlo::Opcode;

/// Why `op` has no indexing maps (every operand of it is UNDEFINED, with this reason), or
/// `None` when its maps are described.
pub fn undefined_reason(op: Opcode) -> Option<&'static str> {
    use Opcode::*;
    Some(match op {
        While => "while: the number of iterations and the loop state are data dependent",
        Conditional => "conditional: the branch taken is data dependent",
        CustomCall => "custom-call: the callee's accesses are opaque",
        AllToAll | RaggedAllToAll => "all-to-all: elements move between participants by a data-independent but device-dependent permutation not expressed here",
        RaggedDot => "ragged-dot: group sizes are data dependent",
        DynamicReshape => "dynamic-reshape: the result shape is data dependent",
        Shuffle => "shuffle: not described",
        CollectivePermuteStart | CollectivePermuteDone | AllGatherStart
        | AllGatherDone | Send | SendDone | Recv | RecvDone | Infeed | Outfeed => {
            "legacy asynchronous / communication op with context state: not described"
        }
        _ => return None,
    })
}
