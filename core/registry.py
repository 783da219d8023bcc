"""What a source *is*, said once: :class:`SourceSpec`, and the :class:`Registry` that holds them.

A source declares one ``SourceSpec`` next to its config class, in the module that runs it
(``flows/<name>.py`` for a source with a flow of its own, as every built-in one has;
``sources/<name>.py``, beside the recipe, for one the generic flow runs). Everything
that used to name a source by a string reads the spec instead: the parent flow (which sources a
dataset can run, in which order, with which config class and default YAML), the sample corpus
(``sample`` and ``sample_section``), the input checks (``input_fields``, from the config class),
dedup (``documents``), labels (``kind``) and the Prefect deployments (``deployment``, checked
against ``prefect.yaml`` by ``kinda deployments --check``).

Pure: no Prefect, no flows. A spec holds the callables it is given (``run``, ``sample``); the
flows layer supplies them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import Field

from core.config import PipelineConfig

if TYPE_CHECKING:
    from core.pipeline import SourceRecipe

#: ``llama``: one of the paper's seven sources (G1); ``extension``: a G.2 extension source (G2 only).
Kind = Literal["llama", "extension"]
#: Writes a source's offline sample inputs into a folder; returns the files written.
SampleWriter = Callable[[Path], list[str]]


class SourceConfig(PipelineConfig):
    """The config of a source without a flow module of its own: input files and a recipe.

    The generic source flow (:mod:`flows.source`) reads every location of :attr:`INPUT_FIELDS`
    (default ``inputs``) with :meth:`recipe`; a subclass adds the recipe's settings as fields.
    """

    INPUT_FIELDS: ClassVar[tuple[str, ...]] = ("inputs",)
    #: Which files are read does not change what a record becomes: not part of the config hash.
    RUNTIME_FIELDS: ClassVar[frozenset[str]] = PipelineConfig.RUNTIME_FIELDS | {"inputs"}

    inputs: list[str] = Field(default_factory=list, description="input files: paths, globs or URLs")

    def recipe(self) -> SourceRecipe:
        """The recipe the pipeline runs over each input (a subclass builds it from its fields)."""
        raise NotImplementedError(f"{type(self).__name__} must define recipe()")


@dataclass(frozen=True)
class SourceSpec:
    """One source: what the parent flow, the sample corpus, the checks and labels need to know.

    ``run``: runs the source on a config of ``config`` (a flow module's ``run``, which picks the
    task runner); None for a source without a flow module: the generic source flow runs it
    (``config.recipe()`` over its input fields). ``flow``: the Prefect flow a deployment points at
    (``None``: the generic one). ``default_yaml``: a file name under ``configs/`` or an absolute
    path. ``documents``: the ``source`` names its shards carry, when not ``name`` (PubMed writes
    two). ``sample``: the offline sample writer; ``sample_section``: how its files become the
    source's config section (default: ``{"inputs": files}``). ``deployment``: the name of its
    deployment in ``prefect.yaml`` (None: not deployed on its own).
    """

    name: str
    config: type[PipelineConfig]
    kind: Kind
    run: Callable[[Any], Any] | None = None
    flow: Any = None
    default_yaml: str = ""
    documents: tuple[str, ...] = ()
    sample: SampleWriter | None = None
    sample_section: Callable[[list[str]], dict[str, Any]] | None = None
    deployment: str | None = ""

    def __post_init__(self) -> None:
        if self.kind not in ("llama", "extension"):
            raise ValueError(f"source {self.name!r}: kind must be 'llama' or 'extension', not {self.kind!r}")
        if not self.default_yaml:
            object.__setattr__(self, "default_yaml", f"{self.name}.yaml")
        if not self.documents:
            object.__setattr__(self, "documents", (self.name,))
        if self.deployment == "":
            object.__setattr__(self, "deployment", self.name)

    @property
    def input_fields(self) -> tuple[str, ...]:
        """The config fields that name inputs (the config class's ``INPUT_FIELDS``)."""
        return self.config.INPUT_FIELDS

    def locations(self, section: dict[str, Any]) -> list[str]:
        """The input locations a config section (or a dumped config) names, over every input field.

        A field that is not a list (Wikipedia's ``date``: the dumps are downloaded) names no local input.
        """
        return [str(x) for key in self.input_fields if isinstance(value := section.get(key), list) for x in value]

    def sample_config(self, files: list[str]) -> dict[str, Any]:
        """The source's config section over its sample files."""
        return self.sample_section(files) if self.sample_section is not None else {"inputs": files}


class Registry:
    """Sources by name, in run order (the built-in ones in the LLaMA paper's table 1 order, then G.2's).

    ``register`` adds a source that lives outside this repository (a plugin, a test's toy source);
    a name can be registered once.
    """

    def __init__(self, specs: Iterable[SourceSpec] = ()) -> None:
        self._specs: dict[str, SourceSpec] = {}
        for spec in specs:
            self.register(spec)

    def register(self, spec: SourceSpec) -> SourceSpec:
        """Add ``spec`` (at the end of the run order); a second source with the same name is an error."""
        if spec.name in self._specs:
            raise ValueError(f"source {spec.name!r} is already registered")
        self._specs[spec.name] = spec
        return spec

    def unregister(self, name: str) -> None:
        """Remove a source registered at run time (a test's toy source)."""
        del self._specs[name]

    def __getitem__(self, name: str) -> SourceSpec:
        try:
            return self._specs[name]
        except KeyError:
            raise KeyError(f"unknown source {name!r}; known: {sorted(self._specs)}") from None

    def __contains__(self, name: object) -> bool:
        return name in self._specs

    def __iter__(self) -> Iterator[str]:
        return iter(self._specs)

    def __len__(self) -> int:
        return len(self._specs)

    def specs(self, kind: Kind | None = None) -> list[SourceSpec]:
        """Every source (of ``kind``), in run order."""
        return [s for s in self._specs.values() if kind is None or s.kind == kind]

    def names(self, kind: Kind | None = None) -> list[str]:
        """Source names (of ``kind``), in run order."""
        return [s.name for s in self.specs(kind)]

    def documents(self, kind: Kind | None = None) -> list[str]:
        """The ``source`` names the shards of these sources carry (what dedup and labels select by)."""
        return [doc for s in self.specs(kind) for doc in s.documents]
