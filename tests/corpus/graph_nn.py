"""Graph neural networks in the PyG style: edge_index message passing, scatter, pooling, sampling."""
import logging
import math
from typing import NamedTuple, Optional

import torch
import torch.nn.functional as F
from torch import nn

log = logging.getLogger("gnn")


class GraphBatch(NamedTuple):
    x: torch.Tensor
    edge_index: torch.Tensor
    batch: Optional[torch.Tensor] = None
    edge_attr: Optional[torch.Tensor] = None


def scatter_sum(src, index, dim_size):
    out = src.new_zeros((dim_size,) + src.shape[1:])
    return out.index_add_(0, index, src)


def scatter_mean(src, index, dim_size):
    total = scatter_sum(src, index, dim_size)
    count = scatter_sum(torch.ones_like(index, dtype=src.dtype), index, dim_size).clamp(min=1)
    return total / count.view(-1, *([1] * (src.dim() - 1)))


def scatter_softmax(scores, index, dim_size):
    amax = scores.new_full((dim_size,) + scores.shape[1:], float("-inf"))
    amax = amax.scatter_reduce(0, index.view(-1, 1).expand_as(scores), scores, "amax", include_self=True)
    exp = (scores - amax[index]).exp()
    return exp / (scatter_sum(exp, index, dim_size)[index] + 1e-16)


def degree(index, num_nodes, dtype=torch.float32):
    return torch.zeros(num_nodes, dtype=dtype, device=index.device).index_add_(
        0, index, torch.ones(index.numel(), dtype=dtype, device=index.device))


def add_self_loops(edge_index, num_nodes):
    loops = torch.arange(num_nodes, device=edge_index.device).unsqueeze(0).repeat(2, 1)
    return torch.cat([edge_index, loops], dim=1)


class GCNConv(nn.Module):
    def __init__(self, in_dim, out_dim, self_loops=True):
        super().__init__()
        self.lin = nn.Linear(in_dim, out_dim, bias=False)
        self.bias = nn.Parameter(torch.zeros(out_dim))
        self.self_loops = self_loops

    def forward(self, x, edge_index):
        n = x.size(0)
        if self.self_loops:
            edge_index = add_self_loops(edge_index, n)
        src, dst = edge_index
        deg = degree(dst, n)
        norm = deg.pow(-0.5)
        norm[torch.isinf(norm)] = 0
        coef = norm[src] * norm[dst]
        msg = self.lin(x)[src] * coef.unsqueeze(-1)
        return scatter_sum(msg, dst, n) + self.bias


class SAGEConv(nn.Module):
    def __init__(self, in_dim, out_dim, normalize=False):
        super().__init__()
        self.lin_neigh = nn.Linear(in_dim, out_dim)
        self.lin_root = nn.Linear(in_dim, out_dim, bias=False)
        self.normalize = normalize

    def forward(self, x, edge_index):
        src, dst = edge_index[0], edge_index[1]
        agg = scatter_mean(x[src], dst, x.size(0))
        out = self.lin_neigh(agg) + self.lin_root(x)
        return F.normalize(out, p=2.0, dim=-1) if self.normalize else out


class GATConv(nn.Module):
    def __init__(self, in_dim, out_dim, heads=2, negative_slope=0.2, dropout=0.0):
        super().__init__()
        self.heads, self.out_dim = heads, out_dim
        self.lin = nn.Linear(in_dim, heads * out_dim, bias=False)
        self.att_src = nn.Parameter(torch.randn(1, heads, out_dim) / math.sqrt(out_dim))
        self.att_dst = nn.Parameter(torch.randn(1, heads, out_dim) / math.sqrt(out_dim))
        self.negative_slope, self.dropout = negative_slope, dropout

    def forward(self, x, edge_index, return_attention=False):
        n = x.size(0)
        h = self.lin(x).view(n, self.heads, self.out_dim)
        edge_index = add_self_loops(edge_index, n)
        src, dst = edge_index
        alpha = (h * self.att_src).sum(-1)[src] + (h * self.att_dst).sum(-1)[dst]
        alpha = F.leaky_relu(alpha, self.negative_slope)
        alpha = scatter_softmax(alpha, dst, n)
        alpha = F.dropout(alpha, p=self.dropout, training=self.training)
        out = scatter_sum(h[src] * alpha.unsqueeze(-1), dst, n).mean(1)
        if return_attention:
            return out, (edge_index, alpha)
        return out


class GINConv(nn.Module):
    def __init__(self, dim, train_eps=True):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, dim))
        self.eps = nn.Parameter(torch.zeros(1)) if train_eps else 0.0

    def forward(self, x, edge_index):
        agg = scatter_sum(x[edge_index[0]], edge_index[1], x.size(0))
        return self.mlp((1 + self.eps) * x + agg)


class EdgeDropout(nn.Module):
    def __init__(self, p=0.3):
        super().__init__()
        self.p = p

    def forward(self, edge_index):
        if not self.training or self.p == 0:
            return edge_index
        keep = torch.rand(edge_index.size(1), device=edge_index.device) >= self.p
        return edge_index[:, keep]  # expect: FL105 GB0036


def global_mean_pool(x, batch, size=None):
    size = int(batch.max()) + 1 if size is None else size  # expect: FL102 GB0124
    return scatter_mean(x, batch, size)


class GraphClassifier(nn.Module):
    def __init__(self, in_dim=4, hidden=8, classes=3, layers=2):
        super().__init__()
        dims = [in_dim] + [hidden] * layers
        self.convs = nn.ModuleList(GCNConv(a, b) for a, b in zip(dims[:-1], dims[1:]))
        self.head = nn.Linear(hidden, classes)

    def forward(self, data: GraphBatch):
        x = data.x
        for conv in self.convs:
            x = F.relu(conv(x, data.edge_index))
        if data.batch is None:
            pooled = x.mean(0, keepdim=True)
        else:
            pooled = global_mean_pool(x, data.batch)
        return self.head(pooled)


class VirtualNode(nn.Module):
    def __init__(self, dim=8, num_graphs=2):
        super().__init__()
        self.num_graphs = num_graphs
        self.vn = nn.Embedding(1, dim)
        self.mlp = nn.Sequential(nn.Linear(dim, dim), nn.ReLU())

    def forward(self, x, batch):
        vn = self.vn.weight.expand(self.num_graphs, -1)
        x = x + vn[batch]
        vn = vn + self.mlp(global_mean_pool(x, batch, self.num_graphs))
        return x, vn


@torch.compile
def to_undirected(edge_index):
    both = torch.cat([edge_index, edge_index.flip(0)], dim=1)
    return torch.unique(both, dim=1)  # expect: FL105 GB0036


@torch.compile
def normalized_adjacency(edge_index, num_nodes: int):
    adj = torch.zeros(num_nodes, num_nodes)
    adj[edge_index[0], edge_index[1]] = 1.0
    adj = adj + torch.eye(num_nodes)
    d = adj.sum(1).rsqrt()
    return d[:, None] * adj * d[None, :]


@torch.compile
def node_classification_loss(logits, y, train_mask):
    loss = F.cross_entropy(logits[train_mask], y[train_mask])  # expect: FL105 GB0036
    acc = (logits.argmax(-1) == y)[train_mask].float().mean()  # expect: FL105 GB0036
    return loss, acc


@torch.compile
def masked_node_loss(logits, y, train_mask):
    per_node = F.cross_entropy(logits, y, reduction="none")
    return (per_node * train_mask).sum() / train_mask.sum().clamp(min=1)


@torch.compile
def sample_neighbors(edge_index, seeds, fanout: int = 2):
    src, dst = edge_index.tolist()  # expect: FL104 GB0033
    adjacency = {}
    for s, d in zip(src, dst):
        adjacency.setdefault(d, []).append(s)
    picked = []
    for node in seeds.tolist():  # expect: FL104 GB0033
        picked.extend((nbr, node) for nbr in adjacency.get(node, [])[:fanout])
    return torch.tensor(picked, dtype=torch.long).t()


@torch.compile
def graph_sizes(batch):
    counts = torch.bincount(batch)  # expect: FL105 GB0036
    log.info("batch of %d graphs", counts.numel())  # expect: FL111 GB0291
    return counts


@torch.compile
def link_scores(z, edge_index, neg_edge_index):
    pos = (z[edge_index[0]] * z[edge_index[1]]).sum(-1)
    neg = (z[neg_edge_index[0]] * z[neg_edge_index[1]]).sum(-1)
    labels = torch.cat([torch.ones_like(pos), torch.zeros_like(neg)])
    return F.binary_cross_entropy_with_logits(torch.cat([pos, neg]), labels)


@torch.compile
def dirichlet_energy(x, edge_index):
    src, dst = edge_index
    return ((x[src] - x[dst]) ** 2).sum() / (2 * x.size(0))


EDGES = torch.tensor([[0, 1, 1, 2, 3, 4], [1, 0, 2, 3, 4, 2]])
BATCH = torch.tensor([0, 0, 0, 1, 1])
LABELS, TRAIN = torch.tensor([0, 1, 2, 1, 0]), torch.tensor([True, False, True, True, False])
CASES = {
    "GCNConv": lambda: (GCNConv(4, 6), (torch.randn(5, 4), EDGES)),
    "SAGEConv": lambda: (SAGEConv(4, 6, normalize=True), (torch.randn(5, 4), EDGES)),
    "GATConv": lambda: (GATConv(4, 3), (torch.randn(5, 4), EDGES)),
    "GATConv_attention": lambda: (GATConv(4, 3), (torch.randn(5, 4), EDGES, True)),
    "GINConv": lambda: (GINConv(4), (torch.randn(5, 4), EDGES)),
    "EdgeDropout": lambda: (EdgeDropout().train(), (EDGES,)),
    "GraphClassifier": lambda: (GraphClassifier(), (GraphBatch(torch.randn(5, 4), EDGES, BATCH),)),
    "GraphClassifier_single": lambda: (GraphClassifier(), (GraphBatch(torch.randn(5, 4), EDGES),)),
    "VirtualNode": lambda: (VirtualNode(), (torch.randn(5, 8), BATCH)),
    "to_undirected": lambda: (to_undirected, (EDGES,)),
    "normalized_adjacency": lambda: (normalized_adjacency, (EDGES, 5)),
    "node_classification_loss": lambda: (node_classification_loss, (torch.randn(5, 3), LABELS, TRAIN)),
    "masked_node_loss": lambda: (masked_node_loss, (torch.randn(5, 3), LABELS, TRAIN.float())),
    "sample_neighbors": lambda: (sample_neighbors, (EDGES, torch.tensor([2, 4]))),
    "graph_sizes": lambda: (graph_sizes, (BATCH,)),
    "link_scores": lambda: (link_scores, (torch.randn(5, 4), EDGES, torch.tensor([[0, 3], [4, 1]]))),
    "dirichlet_energy": lambda: (dirichlet_energy, (torch.randn(5, 4), EDGES)),
}
