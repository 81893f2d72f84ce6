"""Rewrites a SPIR-V module that glslang built with GL_NV_cooperative_matrix into one that uses
SPV_KHR_cooperative_matrix (and, where asked, SPV_KHR_bfloat16 and NV_cooperative_matrix2's
workgroup scope). Debian 12's glslang (2023.2) knows only the NV extension; the drivers that matter
(NVIDIA's among them) offer the KHR one, its bfloat16 types and workgroup-scope matrices, which
the NV extension cannot express.

The two extensions' instructions carry the same information in a different order:
- OpTypeCooperativeMatrixNV (component, scope, rows, columns) -> OpTypeCooperativeMatrixKHR, which
  adds a Use (A, B or accumulator). The use of each type is read off the multiply-adds: the type
  of every OpCooperativeMatrixMulAddNV's first operand is an A, of its second a B, its result an
  accumulator; a type in no multiply-add is an accumulator. Where A and B share one NV type
  (gemm_coop's 16x16 float16 fragments), the B operands get a copy of it with use B: the values
  and Function variables that carry them, joined through loads, stores, phis, copies and selects,
  are retyped (the variables to a pointer to the copy). A fragment that is both an A and a B
  operand, or a B operand from another instruction, is an error.
- OpCooperativeMatrixLoadNV / StoreNV (pointer, stride, column-major bool) -> LoadKHR / StoreKHR
  (pointer, layout constant, stride). The bool must be OpConstantTrue or OpConstantFalse.
- OpCooperativeMatrixMulAddNV / LengthNV -> their KHR opcodes, the same operands.
- Capability CooperativeMatrixNV -> CooperativeMatrixKHR, and the extension's name likewise.

Options (keyword arguments of rewrite()):
- bf16: every float16 matrix type's component becomes bfloat16 (OpTypeFloat 16 BFloat16KHR),
  with the BFloat16TypeKHR and BFloat16CooperativeMatrixKHR capabilities: A and B, and a 16-bit
  matrix that a float32 accumulator is converted to for storing. The shader's shared or buffer
  data are raw 16-bit words either way; only the matrices' reading and writing of them changes.
- rne: before every conversion of a float32 matrix to a 16-bit one (OpFConvert), each element is
  rounded to nearest even at bfloat16 precision, as common.glsl's f32_to_bf16 does (NaN quieted),
  by NV_cooperative_matrix2's per-element operation with a function this rewrite adds; the
  conversion is then exact whatever rounding the driver applies (NVIDIA's truncates to bfloat16,
  and ignores an FPRoundingMode decoration on the conversion). For bfloat16 matrices only.
- A type whose scope is Workgroup keeps it (VK_NV_cooperative_matrix2's workgroup scope); the
  module then also declares SPV_NV_cooperative_matrix2.
"""
import array
import sys

MAGIC = 0x07230203
OP_NAME, OP_EXTENSION, OP_CAPABILITY = 5, 10, 17
OP_TYPE_INT, OP_TYPE_FLOAT = 21, 22
OP_CONSTANT_TRUE, OP_CONSTANT_FALSE, OP_CONSTANT = 41, 42, 43
OP_DECORATE, OP_MEMBER_DECORATE = 71, 72
OP_FCONVERT = 115
NV2_PER_ELEMENT, CAP_PER_ELEMENT = 5369, 5432
NV_TYPE, NV_LOAD, NV_STORE, NV_MULADD, NV_LENGTH = 5358, 5359, 5360, 5361, 5362
KHR_TYPE, KHR_LOAD, KHR_STORE, KHR_MULADD, KHR_LENGTH = 4456, 4457, 4458, 4459, 4460
CAP_COOP_NV, CAP_COOP_KHR = 5357, 6022
CAP_BF16_TYPE, CAP_BF16_COOP = 5116, 5118
USE_A, USE_B, USE_ACC = 0, 1, 2
SCOPE_WORKGROUP = 2


def _string_words(s):
    b = s.encode() + b"\0"
    b += b"\0" * (-len(b) % 4)
    return list(array.array("I", b))


def _string(words):
    b = array.array("I", words).tobytes()
    return b[:b.index(b"\0")].decode()


def _insts(words):
    i = 5
    while i < len(words):
        n = words[i] >> 16
        if n == 0:
            raise ValueError(f"spv_khr: a zero-length instruction at word {i}")
        yield list(words[i:i + n])
        i += n


def rewrite(words, bf16=False, rne=False):
    """The KHR module (a list of words) of the NV module `words`."""
    words = list(words)
    if words[0] != MAGIC:
        raise ValueError("spv_khr: not a SPIR-V module")
    insts = list(_insts(words))
    bound = words[3]

    def new_id():
        nonlocal bound
        bound += 1
        return bound - 1

    uint_t = half_t = None
    consts = {}  # id -> (type, value) of 32-bit OpConstants
    bools = {}  # id -> True/False
    types = set()
    result_type = {}
    for w in insts:
        op = w[0] & 0xffff
        if op == OP_TYPE_INT and w[2] == 32 and w[3] == 0:
            uint_t = w[1]
        if op == OP_TYPE_FLOAT and w[2] == 16 and len(w) == 3:
            half_t = w[1]
        if 19 <= op <= 39 or op in (NV_TYPE, 322, 4456, 5341):
            types.add(w[1])
        elif op in (OP_CONSTANT_TRUE, OP_CONSTANT_FALSE):
            bools[w[2]] = op == OP_CONSTANT_TRUE
        elif op == OP_CONSTANT and len(w) == 4:
            consts[w[2]] = (w[1], w[3])
        elif op not in (OP_NAME, 6, OP_DECORATE, OP_MEMBER_DECORATE) and len(w) > 2 and w[1] in types:
            result_type[w[2]] = w[1]
    if uint_t is None:
        raise ValueError("spv_khr: the module has no 32-bit unsigned integer type")

    nv_types = {w[1]: w for w in insts if w[0] & 0xffff == NV_TYPE}
    use = {}

    def mark(t, u):
        if t not in nv_types:
            raise ValueError(f"spv_khr: %{t} is not a cooperative matrix type")
        if use.setdefault(t, u) != u:
            raise ValueError(f"spv_khr: cooperative matrix type %{t} is used as two operands "
                             f"({use[t]} and {u}); give A and B fragments different types")

    # Values and Function variables that hold the same fragment: joined through loads, stores,
    # phis, copies and selects. The class of a multiply-add's B operand gets a copy of its type
    # (use B) when that type is also an A's; its variables get a pointer type to that copy.
    parent = {}

    def find(x):
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def union(a, b):
        parent[find(a)] = find(b)

    defs = {}
    for w in insts:
        op = w[0] & 0xffff
        if len(w) > 2 and result_type.get(w[2]) == w[1]:  # defines w[2] (OpVariable too)
            defs[w[2]] = w
        if op == 62:  # OpStore pointer object
            union(w[1], w[2])
        elif op == 61:  # OpLoad
            union(w[2], w[3])
        elif op == 245:  # OpPhi
            for x in w[3::2]:
                union(w[2], x)
        elif op == 83:  # OpCopyObject
            union(w[2], w[3])
        elif op == 169:  # OpSelect
            union(w[2], w[4])
            union(w[2], w[5])
    muladds = [w for w in insts if w[0] & 0xffff == NV_MULADD]
    a_classes = {find(w[3]) for w in muladds}
    b_classes = {find(w[4]) for w in muladds}
    if a_classes & b_classes:
        raise ValueError("spv_khr: a fragment is used both as an A and as a B operand")
    b_clone = {}  # an A type's id -> the id of its copy for B operands
    ptr_clone = {}  # that copy's id -> its Function pointer type
    retype = {}  # a value's or variable's id -> its new type
    a_types = {result_type[w[3]] for w in muladds}
    for w in muladds:
        mark(result_type[w[3]], USE_A)
        t = result_type[w[4]]
        if t not in a_types:
            mark(t, USE_B)
        elif t not in b_clone:
            b_clone[t] = new_id()
            ptr_clone[b_clone[t]] = new_id()
        mark(w[1], USE_ACC)
    for v, w in defs.items():
        if find(v) not in b_classes:
            continue
        op = w[0] & 0xffff
        t = result_type.get(v)
        if op == 59:
            retype[v] = ptr_clone.get(b_clone.get(_pointee(insts, w[1])))
        elif op in (NV_LOAD, 61, 245, 83, 169):
            retype[v] = b_clone.get(t)
        else:
            raise ValueError(f"spv_khr: B fragment %{v} comes from an instruction ({op}) this "
                             "rewrite does not follow")
    retype = {v: t for v, t in retype.items() if t is not None}

    added = []  # global instructions, put before the first matrix type

    def uconst(v):
        for i, (t, x) in consts.items():
            if t == uint_t and x == v:
                return i
        i = new_id()
        consts[i] = (uint_t, v)
        added.append([(4 << 16) | OP_CONSTANT, uint_t, i, v])
        return i

    bf16_t = None
    if bf16:
        if half_t is None:
            raise ValueError("spv_khr: bf16 needs float16 matrix types")
        bf16_t = new_id()
        added.insert(0, [(4 << 16) | OP_TYPE_FLOAT, bf16_t, 16, 0])  # FP encoding BFloat16KHR
    for v in (0, 1, 2):  # uses and layouts, all defined before the first matrix type
        uconst(v)
    workgroup = any(consts.get(w[3], (0, 0))[1] == SCOPE_WORKGROUP for w in nv_types.values())

    # rne: the per-element rounding function and the conversions it goes before
    round_fn, round_body = None, []
    converts = [w for w in insts if w[0] & 0xffff == OP_FCONVERT and w[1] in nv_types and
                nv_types[w[1]][2] == half_t] if rne else []
    if converts:
        round_fn, round_body = _rne_function(insts, uint_t, uconst, new_id, added)
    out = []
    placed = False
    for w in insts:
        op = w[0] & 0xffff
        if op == NV_TYPE and not placed:
            out.extend(added_types_after_consts(added))
            placed = True
        if op == OP_CAPABILITY and w[1] == CAP_COOP_NV:
            out.append([w[0], CAP_COOP_KHR])
            if round_fn:
                out.append([w[0], CAP_PER_ELEMENT])
            if bf16:
                out.append([w[0], CAP_BF16_TYPE])
                out.append([w[0], CAP_BF16_COOP])
            continue
        if op == OP_EXTENSION and _string(w[1:]) == "SPV_NV_cooperative_matrix":
            names = ["SPV_KHR_cooperative_matrix"] + (["SPV_KHR_bfloat16"] if bf16 else []) + (
                ["SPV_NV_cooperative_matrix2"] if workgroup or round_fn else [])
            for s in names:
                sw = _string_words(s)
                out.append([((1 + len(sw)) << 16) | OP_EXTENSION] + sw)
            continue
        if op == NV_TYPE:
            comp = w[2]
            u = use.get(w[1], USE_ACC)
            if bf16 and comp == half_t:
                comp = bf16_t
            out.append([(7 << 16) | KHR_TYPE, w[1], comp, w[3], w[4], w[5], uconst(u)])
            if w[1] in b_clone:
                bt = b_clone[w[1]]
                out.append([(7 << 16) | KHR_TYPE, bt, comp, w[3], w[4], w[5], uconst(USE_B)])
                out.append([(4 << 16) | 32, ptr_clone[bt], 7, bt])  # OpTypePointer Function
            continue
        if len(w) > 2 and w[2] in retype and result_type.get(w[2]) == w[1]:
            w = [w[0], retype[w[2]]] + w[2:]
        if op in (NV_LOAD, NV_STORE):
            head = w[1:3] if op == NV_LOAD else []
            ptr_i = 3 if op == NV_LOAD else 1
            ptr = w[ptr_i]
            obj = [] if op == NV_LOAD else [w[2]]
            stride, colmajor, rest = w[ptr_i + 1 + len(obj)], w[ptr_i + 2 + len(obj)], w[ptr_i + 3 + len(obj):]
            if colmajor not in bools:
                raise ValueError("spv_khr: a cooperative matrix load/store's column-major operand "
                                 "is not a constant")
            body = head + [ptr] + obj + [uconst(1 if bools[colmajor] else 0), stride] + rest
            out.append([((1 + len(body)) << 16) | (KHR_LOAD if op == NV_LOAD else KHR_STORE)] + body)
            continue
        if op == NV_MULADD:
            out.append([(w[0] & 0xffff0000) | KHR_MULADD] + w[1:])
            continue
        if op == NV_LENGTH:
            out.append([(w[0] & 0xffff0000) | KHR_LENGTH] + w[1:])
            continue
        if round_fn and op == OP_FCONVERT and w in converts:
            src_t = result_type.get(w[3])
            if src_t not in nv_types or nv_types[src_t][2] != round_body[0]:
                raise ValueError("spv_khr: rne converts only float32 matrices")
            r = new_id()
            out.append([(5 << 16) | NV2_PER_ELEMENT, src_t, r, w[3], round_fn])
            w = w[:3] + [r] + w[4:]
        out.append(w)
    if not placed:
        raise ValueError("spv_khr: the module has no cooperative matrix type")
    out.extend(round_body[1:])
    header = words[:5]
    header[3] = bound
    return header + [x for w in out for x in w]


def _rne_function(insts, uint_t, uconst, new_id, added):
    """float f(uint row, uint col, float x): x rounded to nearest even at bfloat16 precision
    (common.glsl f32_to_bf16, kept as a float32 whose low 16 bits are zero). Returns its id and
    [float type id] + its instructions; adds the function type (and bool) to `added`."""
    f32 = next((w[1] for w in insts if w[0] & 0xffff == OP_TYPE_FLOAT and w[2] == 32), None)
    if f32 is None:
        raise ValueError("spv_khr: rne needs a float32 type")
    bool_t = next((w[1] for w in insts if w[0] & 0xffff == 20), None)
    if bool_t is None:
        bool_t = new_id()
        added.append([(2 << 16) | 20, bool_t])
    fn_t = new_id()
    added.append([(6 << 16) | 33, fn_t, f32, uint_t, uint_t, f32])  # OpTypeFunction
    c = {v: uconst(v) for v in (1, 16, 0x7fff, 0x7fffffff, 0x7f800000, 0x400000, 0xffff0000)}
    fn, row, col, x, label = (new_id() for _ in range(5))
    u, a, nan, q, qm, hi, odd, t, t2, r, sel, y = (new_id() for _ in range(12))

    def i(op, *ops):
        return [((1 + len(ops)) << 16) | op] + list(ops)
    body = [
        i(54, f32, fn, 0, fn_t),  # OpFunction, control None (the driver inlines it)
        i(55, uint_t, row), i(55, uint_t, col), i(55, f32, x), i(248, label),
        i(124, uint_t, u, x),  # OpBitcast
        i(199, uint_t, a, u, c[0x7fffffff]),  # OpBitwiseAnd
        i(172, bool_t, nan, a, c[0x7f800000]),  # OpUGreaterThan: NaN
        i(197, uint_t, q, u, c[0x400000]),  # OpBitwiseOr: quiet
        i(199, uint_t, qm, q, c[0xffff0000]),
        i(194, uint_t, hi, u, c[16]),  # OpShiftRightLogical
        i(199, uint_t, odd, hi, c[1]),
        i(128, uint_t, t, u, c[0x7fff]),  # OpIAdd
        i(128, uint_t, t2, t, odd),
        i(199, uint_t, r, t2, c[0xffff0000]),
        i(169, uint_t, sel, nan, qm, r),  # OpSelect
        i(124, f32, y, sel),
        i(254, y),  # OpReturnValue
        i(56),  # OpFunctionEnd
    ]
    return fn, [f32] + body


def _pointee(insts, ptr_type):
    for w in insts:
        if w[0] & 0xffff == 32 and w[1] == ptr_type:
            return w[3]
    return None


def added_types_after_consts(added):
    """The added globals, types first (a constant may only follow its type)."""
    return sorted(added, key=lambda w: 0 if w[0] & 0xffff == OP_TYPE_FLOAT else 1)


def rewrite_file(src, dst, **kw):
    words = array.array("I", open(src, "rb").read())
    out = array.array("I", rewrite(words, **kw))
    with open(dst, "wb") as f:
        f.write(out.tobytes())


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    rewrite_file(args[0], args[1], bf16="--bf16" in sys.argv, rne="--rne" in sys.argv)
