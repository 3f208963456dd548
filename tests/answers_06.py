"""Learner answers for 06_token_trees: CORRECT ones written differently from the reference, and
WRONG ones with a phrase their hint must contain. A function may call helpers of this module:
tests/support/notebooks.py pastes them into the notebook cell along with it (numpy and math are imported
there; anything else is imported inside the function)."""
import numpy as np

# ---------------------------------------------------------------- correct


def mask_ancestor_sets(parents):
    """Walks up from every node, collecting its ancestors in a set."""
    parents = list(np.asarray(parents).tolist())
    n = len(parents)
    mask = np.zeros((n, n), dtype=bool)
    for i in range(n):
        seen, node = {i}, parents[i]
        while node != -1:
            seen.add(node)
            node = parents[node]
        mask[i, sorted(seen)] = True
    return mask


def mask_matrix_power(parents):
    """Reachability by repeated squaring of (I + A), A[i, parent] = 1; an integer 0/1 array."""
    parents = np.asarray(parents, dtype=np.int64)
    n = len(parents)
    reach = np.eye(n, dtype=np.int64)
    children = np.flatnonzero(parents >= 0)
    reach[children, parents[children]] = 1
    for _ in range(max(1, int(np.ceil(np.log2(n + 1))))):
        reach = np.minimum(reach @ reach, 1)
    return reach


def mask_torch(parents):
    """torch, row by row from the parent's row; returned as numpy."""
    import torch

    par = torch.as_tensor(np.asarray(parents, dtype=np.int64))
    n = par.numel()
    mask = torch.eye(n, dtype=torch.bool)
    for i in range(n):
        if par[i] >= 0:
            mask[i] |= mask[int(par[i])]
    return mask.numpy()


def verify_recursive(tokens, parents, target_choice):
    """Recursion over a dict of children."""
    kids = {}
    for i, parent in enumerate(parents):
        kids.setdefault(int(parent), []).append(i)

    def walk(node):
        want = int(target_choice[node + 1])
        for child in kids.get(node, []):
            if int(tokens[child]) == want:
                return [want] + walk(child)
        return [want]
    return walk(-1)


def verify_lookup(tokens, parents, target_choice):
    """A dict (parent, token) -> node: one lookup per step."""
    node_of = {(int(p), int(t)): i for i, (p, t) in enumerate(zip(parents, tokens))}
    out, node = [], -1
    while True:
        want = int(target_choice[node + 1])
        out.append(want)
        if (node, want) not in node_of:
            return out
        node = node_of[(node, want)]


def verify_numpy(tokens, parents, target_choice):
    """Vectorised search among the children at each step; returns a numpy integer array."""
    tokens, parents, choice = (np.asarray(x, dtype=np.int64) for x in (tokens, parents, target_choice))
    out, node = [], -1
    while True:
        out.append(choice[node + 1])
        hit = np.flatnonzero((parents == node) & (tokens == choice[node + 1]))
        if hit.size == 0:
            return np.array(out, dtype=np.int64)
        node = int(hit[0])


def expected_recursive(parents, accept_prob):
    """f(node) = sum over children c of a_c (1 + f(c)); the answer is 1 + f(root)."""
    kids = {}
    for i, parent in enumerate(parents):
        kids.setdefault(int(parent), []).append(i)

    def below(node):
        return sum(accept_prob[c] * (1 + below(c)) for c in kids.get(node, []))
    return 1.0 + float(below(-1))


def expected_fixed_point(parents, accept_prob):
    """Reach probabilities by iterating reach = a * reach[parent] to a fixed point, in numpy."""
    parents = np.asarray(parents, dtype=np.int64)
    a = np.asarray(accept_prob, dtype=float)
    reach = a.copy()
    for _ in range(len(a)):
        reach = a * np.where(parents >= 0, reach[np.maximum(parents, 0)], 1.0)
    return float(1 + reach.sum())


def expected_float32(parents, accept_prob):
    """Single precision throughout: right to within float32's rounding."""
    a = np.asarray(accept_prob, dtype=np.float32)
    reach = np.zeros_like(a)
    for i, parent in enumerate(parents):
        reach[i] = a[i] * (reach[parent] if parent >= 0 else np.float32(1))
    return float(np.float32(1) + reach.sum(dtype=np.float32))


def select_heapq(parents, path_value, budget):
    import heapq

    best = heapq.nsmallest(max(budget, 0), range(len(path_value)), key=lambda i: (-path_value[i], i))
    return sorted(best)


def select_stable_argsort(parents, path_value, budget):
    """A stable argsort of the negated values; returns a numpy array."""
    order = np.argsort(-np.asarray(path_value, dtype=float), kind="stable")
    return np.sort(order[:budget])


def select_frontier(parents, path_value, budget):
    """EAGLE-2's greedy expansion: grow the tree from the root, always taking the best node on the frontier."""
    import heapq

    kids = {}
    for i, parent in enumerate(parents):
        kids.setdefault(int(parent), []).append(i)
    frontier = [(-path_value[c], c) for c in kids.get(-1, [])]
    heapq.heapify(frontier)
    chosen = []
    while frontier and len(chosen) < budget:
        _, node = heapq.heappop(frontier)
        chosen.append(node)
        for c in kids.get(node, []):
            heapq.heappush(frontier, (-path_value[c], c))
    return sorted(chosen)


def mc_divide(p, q, candidates, rng):
    """u < p_cur / q with an explicit division (q > 0 at a candidate), rng.uniform, rng.choice."""
    p_cur = np.array(p, dtype=float)
    for i, x in enumerate(candidates):
        if q[x] > 0 and rng.uniform() < min(1.0, p_cur[x] / q[x]):
            return int(x), i
        leftover = np.clip(p_cur - q, 0, None)
        if leftover.sum() > 0:
            p_cur = leftover / leftover.sum()
    return int(rng.choice(len(p_cur), p=p_cur)), -1


def mc_uniforms_first(p, q, candidates, rng):
    """All the uniforms drawn up front; the fallback by inverse CDF; the residual divided by 1 - beta."""
    u = rng.random(len(candidates) + 1)
    p_cur = np.asarray(p, dtype=float)
    for i, x in enumerate(candidates):
        if u[i] * q[x] < p_cur[x]:
            return int(x), i
        beta = np.minimum(p_cur, q).sum()
        if beta < 1:
            p_cur = np.maximum(p_cur - q, 0) / (1 - beta)
    cdf = np.cumsum(p_cur)
    token = min(int(np.searchsorted(cdf, u[-1] * cdf[-1], side="right")), len(p_cur) - 1)
    while p_cur[token] == 0:  # a float edge past the last token with mass
        token -= 1
    return token, -1


def mc_recursive(p, q, candidates, rng):
    """Recursion on the candidates left, with numpy integer results."""
    candidates = list(candidates)
    if not candidates:
        return np.int64(rng.choice(len(p), p=p)), np.int64(-1)
    x = candidates[0]
    if rng.random() < p[x] / q[x]:
        return np.int64(x), np.int64(0)
    residual = np.maximum(np.asarray(p) - q, 0)
    token, index = mc_recursive(residual / residual.sum(), q, candidates[1:], rng)
    return token, (index + 1 if index >= 0 else index)



def bb_sorted_once(parents, path_value, c, verify_costs, max_budget):
    """Sorts the nodes once (value descending, index ascending) and grows the tree node by node:
    the best tree of B + 1 nodes is the best of B plus the next node in that order."""
    values = [float(v) for v in path_value]
    parents = [int(p) for p in parents]
    order = sorted(range(len(values)), key=lambda i: (-values[i], i))

    def depth_of(i):
        d = 0
        while i >= 0:
            d, i = d + 1, parents[i]
        return d

    speeds, tokens, deepest = [], 1.0, 0
    for B in range(max_budget + 1):
        if B:
            node = order[B - 1]
            tokens += values[node]
            deepest = max(deepest, depth_of(node))
        speeds.append(tokens / (deepest * c + verify_costs[B + 1]))
    best = max(range(len(speeds)), key=lambda B: (speeds[B], -B))
    return best, np.array(speeds)


def bb_vectorised(parents, path_value, c, verify_costs, max_budget):
    """numpy throughout: a lexsort, cumulative sums of values and a running maximum of depths."""
    par = np.asarray(parents, dtype=np.int64)
    v = np.asarray(path_value, dtype=float)
    depth = np.zeros(len(par), dtype=np.int64)
    for i, p in enumerate(par):
        depth[i] = 1 + (depth[p] if p >= 0 else 0)
    order = np.lexsort((np.arange(len(v)), -v))[:max_budget]
    tokens = 1.0 + np.concatenate([[0.0], np.cumsum(v[order])])
    levels = np.concatenate([[0], np.maximum.accumulate(depth[order])])
    speeds = tokens / (levels * c + np.asarray(verify_costs, dtype=float)[1:max_budget + 2])
    return int(np.argmax(speeds)), speeds


def bb_float32(parents, path_value, c, verify_costs, max_budget):
    """Single precision, and the depth read off an ancestor mask's row sums."""
    n = len(parents)
    mask = np.eye(n, dtype=bool)
    for i, p in enumerate(parents):
        if p >= 0:
            mask[i] |= mask[int(p)]
    depth = mask.sum(axis=1)
    v = np.asarray(path_value, dtype=np.float32)
    order = sorted(range(n), key=lambda i: (-float(path_value[i]), i))
    speeds = np.zeros(max_budget + 1, dtype=np.float32)
    for B in range(max_budget + 1):
        keep = order[:B]
        levels = np.float32(depth[keep].max()) if keep else np.float32(0)
        speeds[B] = (np.float32(1) + v[keep].sum(dtype=np.float32)) / (levels * np.float32(c) + np.float32(verify_costs[B + 1]))
    return int(np.argmax(speeds)), speeds

CORRECT = {
    "tree_attention_mask": [mask_ancestor_sets, mask_matrix_power, mask_torch],
    "verify_tree_greedy": [verify_recursive, verify_lookup, verify_numpy],
    "expected_tree_tokens": [expected_recursive, expected_fixed_point, expected_float32],
    "select_tree": [select_heapq, select_stable_argsort, select_frontier],
    "multi_candidate_sample": [mc_divide, mc_uniforms_first, mc_recursive],
    "best_budget": [bb_sorted_once, bb_vectorised, bb_float32],
}

# ---------------------------------------------------------------- wrong


def mask_causal(parents):
    n = len(parents)
    return np.tril(np.ones((n, n), dtype=bool))


def mask_no_self(parents):
    n = len(parents)
    mask = np.zeros((n, n), dtype=bool)
    for i in range(n):
        node = parents[i]
        while node != -1:
            mask[i, node] = True
            node = parents[node]
    return mask


def mask_siblings(parents):
    """Starts each row from every node that shares the parent (the 'level' of the node)."""
    parents = list(parents)
    n = len(parents)
    mask = np.zeros((n, n), dtype=bool)
    for i in range(n):
        for j in range(n):
            if parents[j] == parents[i]:
                mask[i, j] = True
        if parents[i] >= 0:
            mask[i] |= mask[parents[i]]
    return mask


def mask_parent_only(parents):
    n = len(parents)
    mask = np.eye(n, dtype=bool)
    for i, parent in enumerate(parents):
        if parent >= 0:
            mask[i, parent] = True
    return mask


def mask_transposed(parents):
    n = len(parents)
    mask = np.eye(n, dtype=bool)
    for i in range(n):
        node = parents[i]
        while node != -1:
            mask[node, i] = True
            node = parents[node]
    return mask


def mask_additive(parents):
    """What a model adds to its attention scores, not the bool mask."""
    n = len(parents)
    allowed = np.eye(n, dtype=bool)
    for i, parent in enumerate(parents):
        if parent >= 0:
            allowed[i] |= allowed[parent]
    return np.where(allowed, 0.0, -np.inf)


def mask_root_wraps(parents):
    """Closure of I + A with A[i, parents[i]] = 1 set by fancy indexing: parent -1 lands on the last node."""
    parents = np.asarray(parents)
    n = len(parents)
    reach = np.eye(n, dtype=bool)
    reach[np.arange(n), parents] = True
    for _ in range(n):
        reach = (reach.astype(int) @ reach.astype(int)) > 0
    return reach


def mask_nested_list(parents):
    n = len(parents)
    rows = []
    for i in range(n):
        row = [False] * n
        node = i
        while node != -1:
            row[node] = True
            node = parents[node]
        rows.append(row)
    return rows


def verify_orphans(tokens, parents, target_choice):
    """Accepts every node that matches the target's choice at its parent, accepted parent or not."""
    out, last = [], -1
    for i, parent in enumerate(parents):
        if tokens[i] == target_choice[parent + 1]:
            out.append(int(tokens[i]))
            last = i
    return out + [int(target_choice[last + 1])]


def verify_first_child(tokens, parents, target_choice):
    """Compares only the first child of each node."""
    out, node = [], -1
    while True:
        want = int(target_choice[node + 1])
        kids = [i for i, p in enumerate(parents) if p == node]
        if not kids or tokens[kids[0]] != want:
            return out + [want]
        out.append(want)
        node = kids[0]


def verify_depth_one(tokens, parents, target_choice):
    """Looks at the root's children only."""
    want = int(target_choice[0])
    for i, parent in enumerate(parents):
        if parent == -1 and tokens[i] == want:
            return [want, int(target_choice[i + 1])]
    return [want]


def verify_no_final(tokens, parents, target_choice):
    out, node = [], -1
    while True:
        want = target_choice[node + 1]
        child = next((i for i, p in enumerate(parents) if p == node and tokens[i] == want), None)
        if child is None:
            return out
        out.append(int(want))
        node = child


def verify_off_by_one(tokens, parents, target_choice):
    """target_choice[node] instead of target_choice[node + 1] (and [-1] at the root)."""
    out, node = [], -1
    while True:
        want = int(target_choice[node])
        out.append(want)
        child = next((i for i, p in enumerate(parents) if p == node and tokens[i] == want), None)
        if child is None:
            return out
        node = child


def verify_node_indices(tokens, parents, target_choice):
    out, node = [], -1
    while True:
        want = int(target_choice[node + 1])
        child = next((i for i, p in enumerate(parents) if p == node and tokens[i] == want), None)
        if child is None:
            return out + [want]
        out.append(child)
        node = child


def et_no_one(parents, accept_prob):
    reach = []
    for i, parent in enumerate(parents):
        reach.append(accept_prob[i] * (reach[parent] if parent >= 0 else 1.0))
    return float(sum(reach))


def et_no_product(parents, accept_prob):
    return 1.0 + float(np.sum(accept_prob))


def et_parent_only(parents, accept_prob):
    return 1.0 + sum(float(accept_prob[i]) * (float(accept_prob[p]) if p >= 0 else 1.0)
                     for i, p in enumerate(parents))


def et_chain(parents, accept_prob):
    return 1.0 + float(np.cumprod(accept_prob).sum())


def et_per_leaf(parents, accept_prob):
    """expected_tokens_positional along every root-to-leaf path, summed."""
    parents = list(parents)
    total = 0.0
    for leaf in range(len(parents)):
        if leaf in parents:
            continue
        path, node = [], leaf
        while node != -1:
            path.append(accept_prob[node])
            node = parents[node]
        total += 1.0 + float(np.cumprod(path[::-1]).sum())
    return total


def et_best_path(parents, accept_prob):
    """Follows the most likely child at each node."""
    total, node, survive = 1.0, -1, 1.0
    while True:
        kids = [i for i, p in enumerate(parents) if p == node]
        if not kids:
            return total
        node = max(kids, key=lambda i: accept_prob[i])
        survive *= accept_prob[node]
        total += survive


def et_array(parents, accept_prob):
    reach = np.zeros(len(parents))
    for i, parent in enumerate(parents):
        reach[i] = accept_prob[i] * (reach[parent] if parent >= 0 else 1.0)
    return 1.0 + reach.sum(keepdims=True)


def select_ties_high(parents, path_value, budget):
    order = sorted(range(len(path_value)), key=lambda i: (path_value[i], i), reverse=True)
    return sorted(order[:budget])


def select_smallest(parents, path_value, budget):
    return sorted(np.argsort(path_value, kind="stable")[:budget].tolist())


def select_first(parents, path_value, budget):
    return list(range(min(budget, len(path_value))))


def select_threshold(parents, path_value, budget):
    values = np.asarray(path_value, dtype=float)
    if budget <= 0:
        return []
    cut = np.sort(values)[::-1][min(budget, len(values)) - 1]
    return np.flatnonzero(values >= cut).tolist()


def select_by_value_order(parents, path_value, budget):
    """The right nodes, best first."""
    return [int(i) for i in np.argsort(-np.asarray(path_value, dtype=float), kind="stable")[:budget]]


def select_values(parents, path_value, budget):
    return sorted(path_value, reverse=True)[:budget]


def select_mask(parents, path_value, budget):
    keep = np.zeros(len(path_value), dtype=bool)
    keep[np.argsort(-np.asarray(path_value, dtype=float), kind="stable")[:budget]] = True
    return keep


def select_one_more(parents, path_value, budget):
    return sorted(np.argsort(-np.asarray(path_value, dtype=float), kind="stable")[:budget + 1].tolist())


def mc_no_update(p, q, candidates, rng):
    for i, x in enumerate(candidates):
        if rng.random() < min(1.0, p[x] / q[x]):
            return int(x), i
    return int(rng.choice(len(p), p=p)), -1


def mc_shared_uniform(p, q, candidates, rng):
    u = rng.random()  # one uniform for every candidate
    p_cur = np.asarray(p, dtype=float)
    for i, x in enumerate(candidates):
        if u < min(1.0, p_cur[x] / q[x]):
            return int(x), i
        r = np.maximum(p_cur - q, 0)
        p_cur = r / r.sum()
    return int(rng.choice(len(p_cur), p=p_cur)), -1


def mc_fallback_p(p, q, candidates, rng):
    p_cur = np.asarray(p, dtype=float)
    for i, x in enumerate(candidates):
        if rng.random() < min(1.0, p_cur[x] / q[x]):
            return int(x), i
        r = np.maximum(p_cur - q, 0)
        p_cur = r / r.sum()
    return int(rng.choice(len(p), p=p)), -1


def mc_fallback_q(p, q, candidates, rng):
    p_cur = np.asarray(p, dtype=float)
    for i, x in enumerate(candidates):
        if rng.random() < min(1.0, p_cur[x] / q[x]):
            return int(x), i
        r = np.maximum(p_cur - q, 0)
        p_cur = r / r.sum()
    return int(rng.choice(len(q), p=q)), -1


def mc_unnormalised(p, q, candidates, rng):
    p_cur = np.asarray(p, dtype=float)
    for i, x in enumerate(candidates):
        if rng.random() < min(1.0, p_cur[x] / q[x]):
            return int(x), i
        p_cur = np.maximum(p_cur - q, 0)  # never normalised
    return int(rng.choice(len(p_cur), p=p_cur / p_cur.sum())), -1


def mc_residual_of_p(p, q, candidates, rng):
    p_cur = np.asarray(p, dtype=float)
    for i, x in enumerate(candidates):
        if rng.random() < min(1.0, p_cur[x] / q[x]):
            return int(x), i
        r = np.maximum(np.asarray(p) - q, 0)  # of p, not of p_cur
        p_cur = r / r.sum()
    return int(rng.choice(len(p_cur), p=p_cur)), -1


def mc_stale_fallback(p, q, candidates, rng):
    """Updates p_cur only when another candidate follows."""
    p_cur = np.asarray(p, dtype=float)
    for i, x in enumerate(candidates):
        if rng.random() < min(1.0, p_cur[x] / q[x]):
            return int(x), i
        if i < len(candidates) - 1:
            r = np.maximum(p_cur - q, 0)
            p_cur = r / r.sum()
    return int(rng.choice(len(p_cur), p=p_cur)), -1


def mc_always_accept(p, q, candidates, rng):
    return int(candidates[0]), 0


def mc_one_based(p, q, candidates, rng):
    p_cur = np.asarray(p, dtype=float)
    for i, x in enumerate(candidates, start=1):
        if rng.random() < min(1.0, p_cur[x] / q[x]):
            return int(x), i
        r = np.maximum(p_cur - q, 0)
        p_cur = r / r.sum()
    return int(rng.choice(len(p_cur), p=p_cur)), -1


def mc_global_rng(p, q, candidates, rng):
    p_cur = np.asarray(p, dtype=float)
    for i, x in enumerate(candidates):
        if np.random.random() < min(1.0, p_cur[x] / q[x]):
            return int(x), i
        r = np.maximum(p_cur - q, 0)
        p_cur = r / r.sum()
    return int(np.random.choice(len(p_cur), p=p_cur)), -1


def mc_in_place(p, q, candidates, rng):
    """Right draws, but p_cur is p itself, so the caller's p is overwritten."""
    p_cur = p
    for i, x in enumerate(candidates):
        if rng.random() < min(1.0, p_cur[x] / q[x]):
            return int(x), i
        r = np.maximum(p_cur - q, 0)
        p_cur[:] = r / r.sum()
    return int(rng.choice(len(p_cur), p=p_cur)), -1


def mc_q_minus_p(p, q, candidates, rng):
    p_cur = np.asarray(p, dtype=float)
    for i, x in enumerate(candidates):
        if rng.random() < min(1.0, p_cur[x] / q[x]):
            return int(x), i
        r = np.maximum(q - p_cur, 0)
        p_cur = r / r.sum()
    return int(rng.choice(len(p_cur), p=p_cur)), -1


def mc_deterministic(p, q, candidates, rng):
    """Keeps a candidate exactly when p_cur(x) >= q(x)."""
    p_cur = np.asarray(p, dtype=float)
    for i, x in enumerate(candidates):
        if p_cur[x] >= q[x]:
            return int(x), i
        r = np.maximum(p_cur - q, 0)
        p_cur = r / r.sum()
    return int(rng.choice(len(p_cur), p=p_cur)), -1



def verify_any_node(tokens, parents, target_choice):
    """Looks for the target's choice among all later nodes, not only among the children."""
    out, node = [], -1
    while True:
        want = int(target_choice[node + 1])
        out.append(want)
        child = next((i for i in range(node + 1, len(tokens)) if tokens[i] == want), None)
        if child is None:
            return out
        node = child



def _bb_parts(parents, path_value, max_budget):
    """(tokens, depth of the kept tree, depth of all candidates) for every budget, as a learner computes them."""
    values = [float(x) for x in path_value]
    parents = [int(p) for p in parents]
    depth = []
    for p in parents:
        depth.append(1 if p < 0 else depth[p] + 1)
    order = sorted(range(len(values)), key=lambda i: (-values[i], i))
    rows = []
    for B in range(max_budget + 1):
        keep = order[:B]
        rows.append((1.0 + sum(values[i] for i in keep), max((depth[i] for i in keep), default=0), max(depth)))
    return rows


def bb_no_draft(parents, path_value, c, verify_costs, max_budget):
    speeds = np.array([t / verify_costs[B + 1] for B, (t, d, _) in enumerate(_bb_parts(parents, path_value, max_budget))])
    return int(np.argmax(speeds)), speeds


def bb_verify_b(parents, path_value, c, verify_costs, max_budget):
    """Prices the pass at B positions; budget 0 reads verify_costs[0] (NaN)."""
    speeds = np.array([t / (d * c + verify_costs[B]) for B, (t, d, _) in enumerate(_bb_parts(parents, path_value, max_budget))])
    return int(np.nanargmax(speeds)), speeds


def bb_verify_b_guarded(parents, path_value, c, verify_costs, max_budget):
    """The same mistake, with budget 0 handled apart as plain decoding."""
    rows = _bb_parts(parents, path_value, max_budget)
    speeds = np.array([1.0] + [t / (d * c + verify_costs[B]) for B, (t, d, _) in enumerate(rows) if B])
    return int(np.argmax(speeds)), speeds


def bb_chain_depth(parents, path_value, c, verify_costs, max_budget):
    speeds = np.array([t / (B * c + verify_costs[B + 1]) for B, (t, d, _) in enumerate(_bb_parts(parents, path_value, max_budget))])
    return int(np.argmax(speeds)), speeds


def bb_all_depth(parents, path_value, c, verify_costs, max_budget):
    speeds = np.array([t / ((D if B else 0) * c + verify_costs[B + 1])
                       for B, (t, d, D) in enumerate(_bb_parts(parents, path_value, max_budget))])
    return int(np.argmax(speeds)), speeds


def bb_no_verify(parents, path_value, c, verify_costs, max_budget):
    speeds = np.array([t / (d * c + 1.0) for B, (t, d, _) in enumerate(_bb_parts(parents, path_value, max_budget))])
    return int(np.argmax(speeds)), speeds


def bb_c_inverted(parents, path_value, c, verify_costs, max_budget):
    speeds = np.array([t / (d / c + verify_costs[B + 1]) for B, (t, d, _) in enumerate(_bb_parts(parents, path_value, max_budget))])
    return int(np.argmax(speeds)), speeds


def bb_no_one(parents, path_value, c, verify_costs, max_budget):
    speeds = np.array([(t - 1.0) / (d * c + verify_costs[B + 1])
                       for B, (t, d, _) in enumerate(_bb_parts(parents, path_value, max_budget))])
    return int(np.argmax(speeds)), speeds


def bb_tokens(parents, path_value, c, verify_costs, max_budget):
    """Ranks the budgets by expected tokens per round alone."""
    tokens = np.array([t for t, _, _ in _bb_parts(parents, path_value, max_budget)])
    return int(np.argmax(tokens)), tokens


def bb_largest_tie(parents, path_value, c, verify_costs, max_budget):
    speeds = np.array([t / (d * c + verify_costs[B + 1]) for B, (t, d, _) in enumerate(_bb_parts(parents, path_value, max_budget))])
    return int(len(speeds) - 1 - np.argmax(speeds[::-1])), speeds


def bb_no_zero(parents, path_value, c, verify_costs, max_budget):
    """Budgets 1..max_budget only: never 'do not speculate'."""
    rows = _bb_parts(parents, path_value, max_budget)[1:]
    speeds = np.array([t / (d * c + verify_costs[B + 2]) for B, (t, d, _) in enumerate(rows)])
    return int(np.argmax(speeds)) + 1, speeds


def bb_best_shifted(parents, path_value, c, verify_costs, max_budget):
    """Right speeds, but the best budget counted from 1."""
    speeds = np.array([t / (d * c + verify_costs[B + 1]) for B, (t, d, _) in enumerate(_bb_parts(parents, path_value, max_budget))])
    return int(np.argmax(speeds)) + 1, speeds

WRONG = {
    "tree_attention_mask": [(mask_causal, "causal (lower-triangular)"), (mask_no_self, "must see itself"),
                            (mask_siblings, "siblings see each other"), (mask_parent_only, "grandparents"),
                            (mask_transposed, "transposed"), (mask_additive, "additive"),
                            (mask_root_wraps, "index -1"), (mask_nested_list, "numpy array")],
    "verify_tree_greedy": [(verify_orphans, "parent was not accepted"), (verify_first_child, "first child"),
                           (verify_depth_one, "stops after the first accepted node"),
                           (verify_no_final, "final token is missing"), (verify_off_by_one, "off by one"),
                           (verify_node_indices, "node indices"), (verify_any_node, "parent was not accepted")],
    "expected_tree_tokens": [(et_no_one, "+1 is missing"), (et_no_product, "PRODUCT of accept_prob"),
                             (et_parent_only, "WHOLE path"), (et_chain, "index order"),
                             (et_per_leaf, "once per leaf"), (et_best_path, "one path only"),
                             (et_array, "one number")],
    "select_tree": [(select_ties_high, "LOWER index"), (select_smallest, "smallest path values"),
                    (select_first, "index order"), (select_threshold, "threshold"),
                    (select_by_value_order, "ascending order"), (select_values, "path values"),
                    (select_mask, "boolean mask"), (select_one_more, "wrong number")],
    "multi_candidate_sample": [(mc_no_update, "never updated"), (mc_shared_uniform, "reused"),
                               (mc_fallback_p, "original p;"), (mc_fallback_q, "draws from q"),
                               (mc_unnormalised, "normalised distribution"), (mc_residual_of_p, "original p again"),
                               (mc_stale_fallback, "as it was for the last candidate"),
                               (mc_always_accept, "first candidate every time"), (mc_one_based, "from 1"),
                               (mc_global_rng, "rng argument"), (mc_in_place, "in place"),
                               (mc_q_minus_p, "q - p_cur"), (mc_deterministic, "exactly when p_cur(x) >= q(x)")],
    "best_budget": [(bb_no_draft, "drafting is free"), (bb_verify_b, "priced at B positions"),
                    (bb_verify_b_guarded, "priced at B positions"), (bb_chain_depth, "as if it were a chain"),
                    (bb_all_depth, "whole candidate tree"), (bb_no_verify, "priced at 1 whatever its width"),
                    (bb_c_inverted, "target/draft"), (bb_no_one, "lack the +1"), (bb_tokens, "not speed"),
                    (bb_largest_tie, "SMALLEST budget"), (bb_no_zero, "budget 0 is plain decoding"),
                    (bb_best_shifted, "not the one with the highest speed")],
}
