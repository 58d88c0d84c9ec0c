"""Graph and sparse workloads: edge_index message passing with index_add_ / scatter_reduce, symmetric
degree normalisation, self-loop handling, torch.sparse COO / CSR adjacency, neighbourhood sampling,
connected components (BFS over Python sets and deques, label propagation), k-NN / radius graphs,
attention over neighbours and pooling by cluster assignment."""
import random
from collections import defaultdict, deque
from typing import Dict, List, Optional, Set, Tuple, Union

import torch
import torch.nn.functional as F
from torch import nn

NUM_NODES = 7
FEAT = 6
HIDDEN = 8
MAX_EDGES = 12
FANOUT = 2
DENSE_RATIO = 3
EPS = 1e-9

EdgeIndex = torch.Tensor


# --------------------------------------------------------------------------- graph utilities

def add_self_loops(edge_index: EdgeIndex, num_nodes: int) -> EdgeIndex:
    loops = torch.arange(num_nodes, device=edge_index.device).unsqueeze(0).repeat(2, 1)
    return torch.cat([edge_index, loops], dim=1)


def remove_self_loops(edge_index: EdgeIndex) -> EdgeIndex:
    keep = edge_index[0] != edge_index[1]
    return edge_index[:, keep]  # expect: FL000 GB0036


def degree(index: torch.Tensor, num_nodes: int, dtype=torch.float32) -> torch.Tensor:
    return torch.zeros(num_nodes, dtype=dtype).index_add_(0, index, torch.ones(index.numel(), dtype=dtype))


def sym_norm(edge_index: EdgeIndex, num_nodes: int) -> torch.Tensor:
    row, col = edge_index
    deg = degree(col, num_nodes)
    inv_sqrt = deg.pow(-0.5).masked_fill(deg == 0, 0.0)
    return inv_sqrt[row] * inv_sqrt[col]


def propagate(x: torch.Tensor, edge_index: EdgeIndex, weight: Optional[torch.Tensor] = None,
              *, reduce: str = "sum") -> torch.Tensor:
    src, dst = edge_index
    msg = x[src] if weight is None else x[src] * weight.unsqueeze(-1)
    if reduce == "sum":
        return torch.zeros_like(x).index_add_(0, dst, msg)
    index = dst.unsqueeze(-1).expand_as(msg)
    return torch.zeros_like(x).scatter_reduce(0, index, msg, reduce=reduce, include_self=False)


def coalesce_edges(edge_index: EdgeIndex, num_nodes: int) -> EdgeIndex:
    key = edge_index[0] * num_nodes + edge_index[1]
    uniq = torch.unique(key)  # expect: FL000 GB0036
    return torch.stack([uniq // num_nodes, uniq % num_nodes])


# --------------------------------------------------------------------------- layers

class MessagePassing(nn.Module):
    """Base class: subclasses define message weights; aggregation is shared."""

    def __init__(self, in_dim: int, out_dim: int, *, reduce: str = "sum"):
        super().__init__()
        self.lin = nn.Linear(in_dim, out_dim)
        self.reduce = reduce

    def edge_weight(self, x, edge_index) -> Optional[torch.Tensor]:
        return None

    def forward(self, x, edge_index):
        h = self.lin(x)
        return propagate(h, edge_index, self.edge_weight(h, edge_index), reduce=self.reduce)


class GCNConv(MessagePassing):
    def __init__(self, in_dim: int = FEAT, out_dim: int = HIDDEN):
        super().__init__(in_dim, out_dim)

    def forward(self, x, edge_index):
        edge_index = add_self_loops(edge_index, x.size(0))
        h = self.lin(x)
        return propagate(h, edge_index, sym_norm(edge_index, x.size(0)))


class SAGEConv(MessagePassing):
    """Mean/max aggregation of neighbours concatenated with the root features."""

    def __init__(self, in_dim: int = FEAT, out_dim: int = HIDDEN, reduce: str = "mean"):
        super().__init__(2 * in_dim, out_dim, reduce=reduce)

    def forward(self, x, edge_index):
        agg = propagate(x, edge_index, reduce=self.reduce)
        return F.relu(self.lin(torch.cat([x, agg], dim=-1)))


class GATConv(MessagePassing):
    """Single-head graph attention: softmax over incoming edges via scatter_reduce(amax)."""

    def __init__(self, in_dim: int = FEAT, out_dim: int = HIDDEN, slope: float = 0.2):
        super().__init__(in_dim, out_dim)
        self.att_src = nn.Parameter(torch.randn(out_dim) * 0.1)
        self.att_dst = nn.Parameter(torch.randn(out_dim) * 0.1)
        self.slope = slope

    def edge_weight(self, h, edge_index):
        src, dst = edge_index
        logits = F.leaky_relu((h[src] * self.att_src).sum(-1) + (h[dst] * self.att_dst).sum(-1), self.slope)
        amax = torch.full((h.size(0),), float("-inf")).scatter_reduce(0, dst, logits, "amax", include_self=True)
        e = (logits - amax[dst]).exp()
        denom = torch.zeros(h.size(0)).index_add_(0, dst, e)
        return e / (denom[dst] + EPS)


class CachedGCN(GCNConv):
    """`cached=True`-style layer: computes the normalised adjacency once and stores it."""

    def __init__(self, in_dim: int = FEAT, out_dim: int = HIDDEN):
        super().__init__(in_dim, out_dim)
        self._cached: Optional[Tuple[EdgeIndex, torch.Tensor]] = None

    def forward(self, x, edge_index):
        if self._cached is None:
            ei = add_self_loops(edge_index, x.size(0))
            self._cached = (ei, sym_norm(ei, x.size(0)))  # expect: FL302
        ei, norm = self._cached
        return propagate(self.lin(x), ei, norm)


class SparseGCN(nn.Module):
    """Same layer through a torch.sparse COO adjacency and torch.sparse.mm."""

    def __init__(self, in_dim: int = FEAT, out_dim: int = HIDDEN):
        super().__init__()
        self.lin = nn.Linear(in_dim, out_dim)

    def forward(self, x, edge_index):
        n = x.size(0)
        ei = add_self_loops(edge_index, n)
        adj = torch.sparse_coo_tensor(ei, sym_norm(ei, n), (n, n))  # expect: FL000 GB0007
        return torch.sparse.mm(adj, self.lin(x))  # expect: FL000 GB0015


class EdgeDropout(nn.Module):
    """DropEdge regulariser followed by a GCN layer."""

    def __init__(self, p: float = 0.3):
        super().__init__()
        self.p = p
        self.conv = GCNConv()

    def forward(self, x, edge_index):
        if self.training and self.p > 0:
            keep = torch.rand(edge_index.size(1)) >= self.p
            edge_index = edge_index[:, keep]  # expect: FL000 GB0036
        return self.conv(x, edge_index)


class ClusterPool(nn.Module):
    """Pools node features by a hard cluster assignment (graclus / voxel-grid style)."""

    def __init__(self, dim: int = FEAT):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, cluster):
        _, inverse = torch.unique(cluster, return_inverse=True)  # expect: FL000 GB0036
        n_clusters = int(inverse.max()) + 1  # expect: FL000 GB0124
        index = inverse.unsqueeze(-1).expand_as(x)
        pooled = torch.zeros(n_clusters, x.size(1)).scatter_reduce(0, index, self.proj(x), "mean",
                                                                    include_self=False)
        return pooled


class SubsamplingConv(nn.Module):
    """Caps the number of edges per forward (memory guard) before running SAGE."""

    def __init__(self, max_edges: int = MAX_EDGES):
        super().__init__()
        self.max_edges = max_edges
        self.conv = SAGEConv(reduce="amax")

    def forward(self, x, edge_index):
        if edge_index.size(1) > self.max_edges:  # expect: FL301
            edge_index = edge_index[:, : self.max_edges]
        return self.conv(x, edge_index)


class GNNStack(nn.Module):
    """GCN -> GAT -> SAGE with residual connections and a graph-level readout."""

    def __init__(self):
        super().__init__()
        self.convs = nn.ModuleList([GCNConv(FEAT, HIDDEN), GATConv(HIDDEN, HIDDEN), SAGEConv(HIDDEN, HIDDEN),
                                    MessagePassing(HIDDEN, HIDDEN, reduce="amin")])
        self.inp = nn.Linear(FEAT, HIDDEN)

    def forward(self, x, edge_index, batch, num_graphs: int = 2):
        h = self.inp(x)
        for i, conv in enumerate(self.convs):
            out = conv(x if i == 0 else h, edge_index)
            h = h + F.relu(out)
        return global_mean_pool(h, batch, num_graphs)


def global_mean_pool(h: torch.Tensor, batch: torch.Tensor, num_graphs: Optional[int] = None) -> torch.Tensor:
    size = num_graphs if num_graphs is not None else int(batch.max()) + 1  # expect: FL000 GB0124
    sums = torch.zeros(size, h.size(1)).index_add_(0, batch, h)
    counts = torch.zeros(size).index_add_(0, batch, torch.ones(h.size(0)))
    return sums / counts.clamp_min(1).unsqueeze(-1)


# --------------------------------------------------------------------------- compiled functions

@torch.compile(dynamic=True)
def gcn_two_hop(x, edge_index, w1, w2):
    n = x.size(0)
    ei = add_self_loops(edge_index, n)
    norm = sym_norm(ei, n)
    if ei.size(1) > DENSE_RATIO * n:  # expect: FL301
        # dense-ish graph: one matmul with the materialised adjacency beats gather/scatter
        adj = torch.zeros(n, n).index_put_((ei[1], ei[0]), norm, accumulate=True)
        return adj @ torch.relu(adj @ (x @ w1)) @ w2
    h = torch.relu(propagate(x @ w1, ei, norm))
    return propagate(h @ w2, ei, norm)


@torch.compile
def readout_auto_size(h, batch):
    return global_mean_pool(h, batch)


@torch.compile
def clean_graph(edge_index: EdgeIndex, num_nodes: int = NUM_NODES) -> EdgeIndex:
    return coalesce_edges(remove_self_loops(edge_index), num_nodes)


@torch.compile
def dense_adjacency(edge_index: EdgeIndex, num_nodes: int = NUM_NODES,
                    weight: Optional[torch.Tensor] = None) -> torch.Tensor:
    w = torch.ones(edge_index.size(1)) if weight is None else weight
    adj = torch.zeros(num_nodes, num_nodes)
    adj.index_put_((edge_index[0], edge_index[1]), w, accumulate=True)
    return adj


def to_undirected(edge_index: EdgeIndex, num_nodes: int) -> EdgeIndex:
    return coalesce_edges(torch.cat([edge_index, edge_index.flip(0)], dim=1), num_nodes)


@torch.compile
def knn_graph(pos: torch.Tensor, k: int = 3, symmetric: bool = False, *, loop: bool = False) -> EdgeIndex:
    d = torch.cdist(pos, pos)
    if not loop:
        d = d + torch.eye(pos.size(0)) * 1e9
    nbr = d.topk(k, largest=False).indices
    src = torch.arange(pos.size(0)).repeat_interleave(k)
    edge_index = torch.stack([nbr.reshape(-1), src])
    return to_undirected(edge_index, pos.size(0)) if symmetric else edge_index


@torch.compile
def radius_graph(pos: torch.Tensor, r: float = 1.0) -> EdgeIndex:
    d = torch.cdist(pos, pos)
    within = (d < r) & ~torch.eye(pos.size(0), dtype=torch.bool)
    return within.nonzero().t()  # expect: FL000 GB0036


def _adjacency_lists(edge_index: EdgeIndex) -> Dict[int, Set[int]]:
    adj: Dict[int, Set[int]] = defaultdict(set)
    for u, v in edge_index.t().tolist():  # expect: FL000 GB0033
        adj[u].add(v)
        adj[v].add(u)
    return adj


def _bfs(adj: Dict[int, Set[int]], start: int, seen: Set[int]) -> List[int]:
    queue, comp = deque([start]), []
    seen.add(start)
    while queue:
        u = queue.popleft()
        comp.append(u)
        for v in sorted(adj[u]):
            if v not in seen:
                seen.add(v)
                queue.append(v)
    return comp


@torch.compile
def connected_components_bfs(edge_index: EdgeIndex, num_nodes: int = NUM_NODES) -> torch.Tensor:
    adj = _adjacency_lists(edge_index)
    seen: Set[int] = set()
    labels = torch.empty(num_nodes, dtype=torch.long)
    comp_id = 0
    for node in range(num_nodes):
        if node in seen:
            continue
        for member in _bfs(adj, node, seen):
            labels[member] = comp_id
        comp_id += 1
    return labels


@torch.compile
def label_propagation_components(edge_index: EdgeIndex, num_nodes: int = NUM_NODES) -> torch.Tensor:
    labels = torch.arange(num_nodes)
    src, dst = torch.cat([edge_index, edge_index.flip(0)], dim=1)
    changed = True
    while changed:
        new = labels.scatter_reduce(0, dst, labels[src], "amin", include_self=True)
        changed = bool((new != labels).any())  # expect: FL000 GB0124
        labels = new
    return labels


def _sample_neighbors(adj: Dict[int, Set[int]], seeds: List[int], fanout: int,
                      rng: random.Random) -> List[Tuple[int, int]]:
    edges = []
    for s in seeds:
        nbrs = sorted(adj[s])
        for v in (rng.sample(nbrs, fanout) if len(nbrs) > fanout else nbrs):  # expect: FL000 GB0156
            edges.append((v, s))
    return edges


@torch.compile
def sample_subgraph(x, edge_index, seeds: torch.Tensor, fanout: int = FANOUT, seed: int = 0):
    rng = random.Random(seed)
    adj = _adjacency_lists(edge_index)
    edges = _sample_neighbors(adj, seeds.tolist(), fanout, rng)  # expect: FL000 GB0033
    sub = torch.tensor(edges, dtype=torch.long).t()
    return propagate(x, sub, reduce="mean")


@torch.compile
def degree_features(x, edge_index, *, max_degree: Optional[int] = None):
    deg = degree(edge_index[1], x.size(0)).long()
    if max_degree is None:
        max_degree = int(deg.max())  # expect: FL000 GB0124
    return torch.cat([x, F.one_hot(deg.clamp(max=max_degree), max_degree + 1).float()], dim=-1)


@torch.compile
def csr_spmm(x, edge_index, num_nodes: int = NUM_NODES):
    values = torch.ones(edge_index.size(1))
    adj = torch.sparse_coo_tensor(edge_index, values, (num_nodes, num_nodes)).coalesce().to_sparse_csr()  # expect: FL000 GB0007; FL000 GB0015
    return adj @ x


@torch.compile
def degree_histogram(edge_index: EdgeIndex) -> torch.Tensor:
    deg = torch.bincount(edge_index[1])  # expect: FL000 GB0036
    return torch.bincount(deg).float() / deg.numel()  # expect: FL000 GB0036


# --------------------------------------------------------------------------- cases

_EDGES = torch.tensor([[0, 1, 1, 2, 3, 4, 5, 2, 6, 3],
                       [1, 0, 2, 1, 4, 3, 6, 2, 5, 2]])
_EDGES_LONG = torch.tensor([[0, 1, 1, 2, 3, 4, 5, 6, 2, 3, 0, 4, 1, 5, 6, 2, 3],
                            [1, 0, 2, 1, 4, 3, 6, 5, 3, 2, 4, 0, 5, 1, 2, 6, 0]])
_BATCH = torch.tensor([0, 0, 0, 1, 1, 1, 1])


def _x(n: int = NUM_NODES, d: int = FEAT, seed: int = 0) -> torch.Tensor:
    return torch.randn(n, d, generator=torch.Generator().manual_seed(seed))


CASES = {
    "GCNConv": lambda: (GCNConv(), (_x(), _EDGES)),
    "SAGEConv": lambda: (SAGEConv(), (_x(), _EDGES)),
    "GATConv": lambda: (GATConv(), (_x(), _EDGES)),
    "CachedGCN": lambda: (CachedGCN(), (_x(), _EDGES)),
    "SparseGCN": lambda: (SparseGCN(), (_x(), _EDGES)),
    "EdgeDropout": lambda: (EdgeDropout(), (_x(), _EDGES)),
    "ClusterPool": lambda: (ClusterPool(), (_x(), torch.tensor([3, 3, 8, 8, 8, 1, 1]))),
    "SubsamplingConv": lambda: (SubsamplingConv(), (_x(), _EDGES), (_x(), _EDGES_LONG)),
    "GNNStack": lambda: (GNNStack(), (_x(), _EDGES, _BATCH)),
    "gcn_two_hop": lambda: (gcn_two_hop, (_x(), _EDGES, torch.randn(FEAT, HIDDEN), torch.randn(HIDDEN, 3)),
                            (_x(), _EDGES_LONG, torch.randn(FEAT, HIDDEN), torch.randn(HIDDEN, 3))),
    "readout_auto_size": lambda: (readout_auto_size, (_x(), _BATCH)),
    "clean_graph": lambda: (clean_graph, (_EDGES,)),
    "dense_adjacency": lambda: (dense_adjacency, (_EDGES,)),
    "knn_graph": lambda: (knn_graph, (torch.randn(NUM_NODES, 3), 2)),
    "knn_graph_symmetric": lambda: (knn_graph, (torch.randn(NUM_NODES, 3), 2, True)),
    "radius_graph": lambda: (radius_graph, (torch.randn(NUM_NODES, 3),)),
    "connected_components_bfs": lambda: (connected_components_bfs, (_EDGES,)),
    "label_propagation_components": lambda: (label_propagation_components, (_EDGES,)),
    "sample_subgraph": lambda: (sample_subgraph, (_x(), _EDGES, torch.tensor([1, 2, 3]))),
    "degree_features": lambda: (degree_features, (_x(), _EDGES)),
    "csr_spmm": lambda: (csr_spmm, (_x(), _EDGES)),
    "degree_histogram": lambda: (degree_histogram, (_EDGES,)),
}
