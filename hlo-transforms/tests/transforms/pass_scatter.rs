//! The scatter expander against scatter's definition, computed here: updates added at
//! their indices, out-of-bounds windows skipped, row windows, assignment.

use hlo::literal::{ArrayData, ArrayLiteral};
use hlo::pass::Pass;
use hlo::{ElementType, Literal, Shape};

fn lit(ty: ElementType, dims: &[i64], data: ArrayData) -> Literal {
    Literal::Array(ArrayLiteral::new(Shape::array(ty, dims.to_vec()), data).unwrap())
}

fn expand_and_run(text: &str, args: &[Literal]) -> Literal {
    let mut m = hlo::parse_module(text).unwrap();
    assert!(hlo_transforms::ScatterExpander::default()
        .run(&mut m)
        .unwrap());
    hlo::pass::verify::verify(&m).unwrap_or_else(|e| panic!("{e}\n{}", hlo::print_module(&m)));
    assert!(!hlo::print_module(&m).contains("scatter("));
    hlo_eval::evaluate(&m, args).unwrap()
}

#[test]
fn scalar_scatter_add_with_repeats_and_out_of_bounds() {
    let text = "HloModule m\nadd {\n  x = s32[] parameter(0)\n  y = s32[] parameter(1)\n  ROOT s = s32[] add(x, y)\n}\nENTRY e {\n  o = s32[5] parameter(0)\n  i = s32[4,1] parameter(1)\n  u = s32[4] parameter(2)\n  ROOT r = s32[5] scatter(o, i, u), update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add\n}\n";
    let out = expand_and_run(
        text,
        &[
            lit(ElementType::S32, &[5], ArrayData::S32(vec![1, 2, 3, 4, 5])),
            lit(ElementType::S32, &[4, 1], ArrayData::S32(vec![1, 3, 1, 7])),
            lit(ElementType::S32, &[4], ArrayData::S32(vec![10, 20, 30, 40])),
        ],
    );
    // Index 7 is out of bounds: skipped.
    assert_eq!(
        out.as_array().unwrap().data(),
        &ArrayData::S32(vec![1, 42, 3, 24, 5])
    );
}

#[test]
fn row_windows_assigned() {
    // Operand [3,2]; each update is a row [2] written at row index (assignment).
    let text = "HloModule m\nset {\n  x = f32[] parameter(0)\n  ROOT y = f32[] parameter(1)\n}\nENTRY e {\n  o = f32[3,2] parameter(0)\n  i = s32[2] parameter(1)\n  u = f32[2,2] parameter(2)\n  ROOT r = f32[3,2] scatter(o, i, u), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=set\n}\n";
    let out = expand_and_run(
        text,
        &[
            lit(ElementType::F32, &[3, 2], ArrayData::F32(vec![0.0; 6])),
            lit(ElementType::S32, &[2], ArrayData::S32(vec![2, 0])),
            lit(
                ElementType::F32,
                &[2, 2],
                ArrayData::F32(vec![1.0, 2.0, 3.0, 4.0]),
            ),
        ],
    );
    assert_eq!(
        out.as_array().unwrap().data(),
        &ArrayData::F32(vec![3.0, 4.0, 0.0, 0.0, 1.0, 2.0])
    );
}

#[test]
fn any_scalar_combiner_becomes_a_map_in_update_order() {
    // f(old, new) = 2 * old - new: neither commutative nor a single op of the parameters.
    let text = "HloModule m\nf {\n  x = s32[] parameter(0)\n  y = s32[] parameter(1)\n  two = s32[] constant(2)\n  d = s32[] multiply(x, two)\n  ROOT s = s32[] subtract(d, y)\n}\nENTRY e {\n  o = s32[5] parameter(0)\n  i = s32[4,1] parameter(1)\n  u = s32[4] parameter(2)\n  ROOT r = s32[5] scatter(o, i, u), update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=f\n}\n";
    let args = [
        lit(ElementType::S32, &[5], ArrayData::S32(vec![1, 2, 3, 4, 5])),
        lit(ElementType::S32, &[4, 1], ArrayData::S32(vec![1, 3, 1, 7])),
        lit(ElementType::S32, &[4], ArrayData::S32(vec![10, 20, 30, 40])),
    ];
    let direct = hlo_eval::evaluate(&hlo::parse_module(text).unwrap(), &args).unwrap();
    let out = expand_and_run(text, &args);
    // Index 1: 2*2-10 = -6, then 2*(-6)-30 = -42; index 3: 2*4-20 = -12; 7 is skipped.
    assert_eq!(
        out.as_array().unwrap().data(),
        &ArrayData::S32(vec![1, -42, 3, -12, 5])
    );
    assert_eq!(out, direct);
}

#[test]
fn batching_dimensions_become_iota_indices() {
    // Row b of the operand takes the updates of batch b at that batch's own indices.
    let add = "add {\n  x = s32[] parameter(0)\n  y = s32[] parameter(1)\n  ROOT s = s32[] add(x, y)\n}\n";
    let explicit = format!("HloModule m\n{add}ENTRY e {{\n  o = s32[2,4] parameter(0)\n  i = s32[2,3,1] parameter(1)\n  u = s32[2,3] parameter(2)\n  ROOT r = s32[2,4] scatter(o, i, u), update_window_dims={{}}, inserted_window_dims={{1}}, input_batching_dims={{0}}, scatter_indices_batching_dims={{0}}, scatter_dims_to_operand_dims={{1}}, index_vector_dim=2, to_apply=add\n}}\n");
    // The same with an implicit index vector dimension and the batch dimension last.
    let implicit = format!("HloModule m\n{add}ENTRY e {{\n  o = s32[2,4] parameter(0)\n  i = s32[3,2] parameter(1)\n  u = s32[3,2] parameter(2)\n  ROOT r = s32[2,4] scatter(o, i, u), update_window_dims={{}}, inserted_window_dims={{1}}, input_batching_dims={{0}}, scatter_indices_batching_dims={{1}}, scatter_dims_to_operand_dims={{1}}, index_vector_dim=2, to_apply=add\n}}\n");
    let o = lit(ElementType::S32, &[2, 4], ArrayData::S32(vec![0; 8]));
    // Batch 0 writes at 0, 2, 2; batch 1 at 3, 9 (out of bounds, skipped), 1.
    let idx = [0, 2, 2, 3, 9, 1];
    let upd = [1, 2, 3, 10, 20, 30];
    let want = ArrayData::S32(vec![1, 0, 5, 0, 0, 30, 0, 10]);
    let args = [
        o.clone(),
        lit(ElementType::S32, &[2, 3, 1], ArrayData::S32(idx.to_vec())),
        lit(ElementType::S32, &[2, 3], ArrayData::S32(upd.to_vec())),
    ];
    let direct = hlo_eval::evaluate(&hlo::parse_module(&explicit).unwrap(), &args).unwrap();
    let out = expand_and_run(&explicit, &args);
    assert_eq!(out.as_array().unwrap().data(), &want);
    assert_eq!(out, direct);
    // Transposed to [3, 2]: element (k, b) is batch b's k-th index.
    let t = |v: [i32; 6]| vec![v[0], v[3], v[1], v[4], v[2], v[5]];
    let args = [
        o,
        lit(ElementType::S32, &[3, 2], ArrayData::S32(t(idx))),
        lit(ElementType::S32, &[3, 2], ArrayData::S32(t(upd))),
    ];
    let out = expand_and_run(&implicit, &args);
    assert_eq!(out.as_array().unwrap().data(), &want);
}

#[test]
fn variadic_scatter_keeps_every_operand_in_the_loop() {
    // Two operands of different types combined together: the s32 one counts updates,
    // the f32 one keeps the value of the update with the largest key (argmax-like).
    let text = "HloModule m\nf {\n  ok = s32[] parameter(0)\n  ov = f32[] parameter(1)\n  nk = s32[] parameter(2)\n  nv = f32[] parameter(3)\n  gt = pred[] compare(nk, ok), direction=GT\n  k = s32[] select(gt, nk, ok)\n  v = f32[] select(gt, nv, ov)\n  ROOT t = (s32[], f32[]) tuple(k, v)\n}\nENTRY e {\n  keys = s32[4] parameter(0)\n  vals = f32[4] parameter(1)\n  i = s32[5,1] parameter(2)\n  uk = s32[5] parameter(3)\n  uv = f32[5] parameter(4)\n  ROOT r = (s32[4], f32[4]) scatter(keys, vals, i, uk, uv), update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=f\n}\n";
    let args = [
        lit(ElementType::S32, &[4], ArrayData::S32(vec![0, 0, 0, 0])),
        lit(ElementType::F32, &[4], ArrayData::F32(vec![-1.0; 4])),
        lit(
            ElementType::S32,
            &[5, 1],
            ArrayData::S32(vec![2, 0, 2, 5, 2]),
        ),
        lit(ElementType::S32, &[5], ArrayData::S32(vec![3, 1, 7, 9, 5])),
        lit(
            ElementType::F32,
            &[5],
            ArrayData::F32(vec![0.5, 1.5, 2.5, 3.5, 4.5]),
        ),
    ];
    let direct = hlo_eval::evaluate(&hlo::parse_module(text).unwrap(), &args).unwrap();
    let out = expand_and_run(text, &args);
    // Index 2 sees keys 3, 7, 5: key 7 wins with 2.5; index 0 takes key 1; 5 is skipped.
    let Literal::Tuple(parts) = &out else {
        panic!("tuple result expected, got {out:?}");
    };
    assert_eq!(
        parts[0].as_array().unwrap().data(),
        &ArrayData::S32(vec![1, 0, 7, 0])
    );
    assert_eq!(
        parts[1].as_array().unwrap().data(),
        &ArrayData::F32(vec![1.5, -1.0, 2.5, -1.0])
    );
    assert_eq!(out, direct);
}
