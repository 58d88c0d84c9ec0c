"""Convolutional building blocks: ResNet, depthwise-separable, squeeze-excite, U-Net pieces."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class ConvBNAct(nn.Sequential):
    def __init__(self, cin, cout, k=3, stride=1, groups=1):
        super().__init__(
            nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False),
            nn.BatchNorm2d(cout),
            nn.SiLU(inplace=True),
        )


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = nn.Identity()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class SqueezeExcite(nn.Module):
    def __init__(self, channels, reduction=4):
        super().__init__()
        self.fc1 = nn.Conv2d(channels, channels // reduction, 1)
        self.fc2 = nn.Conv2d(channels // reduction, channels, 1)

    def forward(self, x):
        s = F.adaptive_avg_pool2d(x, 1)
        return x * self.fc2(F.relu(self.fc1(s))).sigmoid()


class MBConv(nn.Module):
    """Inverted residual with stochastic depth applied only while training."""

    def __init__(self, channels, expand=4, drop_path=0.1):
        super().__init__()
        hidden = channels * expand
        self.expand = ConvBNAct(channels, hidden, 1)
        self.dw = ConvBNAct(hidden, hidden, 3, groups=hidden)
        self.se = SqueezeExcite(hidden)
        self.project = nn.Sequential(nn.Conv2d(hidden, channels, 1, bias=False), nn.BatchNorm2d(channels))
        self.drop_path = drop_path

    def forward(self, x):
        out = self.project(self.se(self.dw(self.expand(x))))
        if self.training and self.drop_path > 0:
            keep = torch.rand(x.shape[0], 1, 1, 1) > self.drop_path
            out = out * keep / (1 - self.drop_path)
        return x + out


class DropPathSkipper(nn.Module):
    """Skips the whole branch when the random draw says so -- a data-dependent branch."""

    def __init__(self, channels, p=0.2):
        super().__init__()
        self.block = BasicBlock(channels, channels)
        self.p = p

    def forward(self, x):
        if self.training and torch.rand(()) < self.p:  # expect: FL101 GB0170
            return x
        return self.block(x)


class UpBlock(nn.Module):
    def __init__(self, cin, cskip, cout):
        super().__init__()
        self.conv = ConvBNAct(cin + cskip, cout)

    def forward(self, x, skip):
        x = F.interpolate(x, size=skip.shape[-2:], mode="nearest")
        return self.conv(torch.cat([x, skip], dim=1))


class CropUpBlock(UpBlock):
    """Pads odd-sized feature maps before concatenating (original U-Net)."""

    def forward(self, x, skip):
        x = F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False)
        dh, dw = skip.shape[-2] - x.shape[-2], skip.shape[-1] - x.shape[-1]
        if dh or dw:  # expect: FL301
            x = F.pad(x, (dw // 2, dw - dw // 2, dh // 2, dh - dh // 2))
        return self.conv(torch.cat([x, skip], dim=1))


class FeatureStats(nn.Module):
    """Records activation statistics for a dashboard."""

    def __init__(self, channels):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, padding=1)
        self.stats = {}

    def forward(self, x):
        y = self.conv(x)
        self.stats["sparsity"] = (y <= 0).float().mean().item()  # expect: FL102 GB0124; FL302
        return F.relu(y)


class DeadChannelPruner(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 1)

    def forward(self, x):
        y = self.conv(x)
        alive = y.abs().amax(dim=(0, 2, 3)) > 1e-3
        return y[:, alive]  # expect: FL105 GB0036


class ChannelShuffle(nn.Module):
    def __init__(self, groups):
        super().__init__()
        self.groups = groups

    def forward(self, x):
        b, c, h, w = x.shape
        return x.view(b, self.groups, c // self.groups, h, w).transpose(1, 2).reshape(b, c, h, w)


class CoordConv(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.conv = nn.Conv2d(cin + 2, cout, 3, padding=1)

    def forward(self, x):
        b, _, h, w = x.shape
        ys = torch.linspace(-1, 1, h).view(1, 1, h, 1).expand(b, 1, h, w)
        xs = torch.linspace(-1, 1, w).view(1, 1, 1, w).expand(b, 1, h, w)
        return self.conv(torch.cat([x, ys, xs], dim=1))


class TinyResNet(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.stem = ConvBNAct(3, 8)
        self.stages = nn.Sequential(BasicBlock(8, 8), BasicBlock(8, 16, stride=2), MBConv(16))
        self.head = nn.Linear(16, classes)

    def forward(self, x):
        x = self.stages(self.stem(x))
        return self.head(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


@torch.compile
def sobel_edges(img):
    kx = torch.tensor([[-1.0, 0.0, 1.0], [-2.0, 0.0, 2.0], [-1.0, 0.0, 1.0]])
    kernel = torch.stack([kx, kx.t()])[:, None]
    grad = F.conv2d(img, kernel, padding=1)
    return grad.pow(2).sum(1, keepdim=True).sqrt()


@torch.compile
def gaussian_blur(img, sigma: float = 1.0):
    radius = int(3 * sigma)
    coords = torch.arange(-radius, radius + 1, dtype=torch.float32)
    kernel = torch.exp(-coords ** 2 / (2 * sigma ** 2))
    kernel = kernel / kernel.sum()
    c = img.shape[1]
    img = F.conv2d(img, kernel.view(1, 1, 1, -1).repeat(c, 1, 1, 1), padding=(0, radius), groups=c)
    return F.conv2d(img, kernel.view(1, 1, -1, 1).repeat(c, 1, 1, 1), padding=(radius, 0), groups=c)


@torch.compile
def adaptive_blur(img):
    sigma = img.std().item()  # expect: FL102 GB0124
    radius = max(1, int(2 * sigma))
    return F.avg_pool2d(img, 2 * radius + 1, stride=1, padding=radius)


CASES = {
    "ConvBNAct": lambda: (ConvBNAct(3, 8), (torch.randn(2, 3, 8, 8),)),
    "BasicBlock": lambda: (BasicBlock(4, 8, stride=2), (torch.randn(2, 4, 8, 8),)),
    "SqueezeExcite": lambda: (SqueezeExcite(8), (torch.randn(2, 8, 4, 4),)),
    "MBConv": lambda: (MBConv(4), (torch.randn(2, 4, 6, 6),)),
    "MBConv_eval": lambda: (MBConv(4).eval(), (torch.randn(2, 4, 6, 6),)),
    "DropPathSkipper": lambda: (DropPathSkipper(4), (torch.randn(2, 4, 6, 6),)),
    "UpBlock": lambda: (UpBlock(8, 4, 4), (torch.randn(2, 8, 3, 3), torch.randn(2, 4, 6, 6))),
    "CropUpBlock": lambda: (
        CropUpBlock(8, 4, 4), (torch.randn(2, 8, 3, 3), torch.randn(2, 4, 6, 6)),
        (torch.randn(2, 8, 3, 3), torch.randn(2, 4, 7, 7))),
    "FeatureStats": lambda: (FeatureStats(4), (torch.randn(2, 4, 5, 5),)),
    "DeadChannelPruner": lambda: (DeadChannelPruner(4), (torch.randn(2, 4, 5, 5),)),
    "ChannelShuffle": lambda: (ChannelShuffle(2), (torch.randn(2, 4, 5, 5),)),
    "CoordConv": lambda: (CoordConv(3, 4), (torch.randn(2, 3, 5, 6),)),
    "TinyResNet": lambda: (TinyResNet(), (torch.randn(2, 3, 8, 8),)),
    "sobel_edges": lambda: (sobel_edges, (torch.randn(2, 1, 8, 8),)),
    "gaussian_blur": lambda: (gaussian_blur, (torch.randn(1, 3, 9, 9),)),
    "adaptive_blur": lambda: (adaptive_blur, (torch.randn(1, 3, 9, 9),)),
}
