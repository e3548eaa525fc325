from datetime import datetime
from typing import Any, Optional, Union

from .base_client import BaseClient
from .base_model import UNSET, UnsetType
from .cancel_job import CancelJob
from .compare_runs import CompareRuns
from .enums import (
    Evidence,
    ReviewDecision,
    RunOrder,
    RunStatus,
    WorkloadKind,
    WorkloadOrder,
)
from .hardware_catalogue import HardwareCatalogue
from .hardware_record_table import HardwareRecordTable
from .hardware_records import HardwareRecords
from .implementation_list import ImplementationList
from .input_types import JobFilter, SubmitImplementationInput
from .job_follow import JobFollow
from .job_list import JobList
from .node_by_id import NodeById
from .record_feed import RecordFeed
from .retract_run import RetractRun
from .review_run import ReviewRun
from .run_table import RunTable
from .submit_implementation import SubmitImplementation
from .workload_list import WorkloadList
from .workload_page import WorkloadPage
from .workload_record_history import WorkloadRecordHistory
from .workload_record_table import WorkloadRecordTable
from .workload_runs import WorkloadRuns
from .workload_runs_backward import WorkloadRunsBackward


def gql(q: str) -> str:
    return q


class KernelIndexGraphQL(BaseClient):
    def cancel_job(
        self, id: str, reason: Union[Optional[str], UnsetType] = UNSET, **kwargs: Any
    ) -> CancelJob:
        query = gql("""
            mutation CancelJob($id: ID!, $reason: String) {
              cancelJob(id: $id, reason: $reason) {
                ok
                alreadyCancelled
                wasRunning
                error
                job {
                  ...JobProgress
                }
              }
            }

            fragment ConfigurationLine on Configuration {
              dtype
              display
              bindings {
                axis
                value
              }
            }

            fragment HardwareBadge on Hardware {
              id
              sku
              shortName
              family
              vendor
            }

            fragment ImplementationBadge on Implementation {
              id
              slug
              title
              framework
              licence
              isBaseline
              availabilityLabel
              runtimeDisplay
            }

            fragment JobProgress on Job {
              id
              databaseId
              state
              kind
              reason
              hardware
              replica
              attempts
              maxAttempts
              worker
              createdAt
              startedAt
              finishedAt
              durationS
              implementationSlug
              workload {
                id
                slug
                title
              }
              run {
                ...RunFigures
              }
              baselineRun {
                id
                meanMs
                latencyDisplay
              }
            }

            fragment RunFigures on Run {
              id
              databaseId
              workloadSlug
              status
              evidence
              trustLevel
              trustLabel
              stale
              meanMs
              ciHalfWidthMs
              latencyDisplay
              plusMinusDisplay
              statisticDisplay
              observedAt
              observedDisplay
              reviewStatus
              caveats
              configuration {
                ...ConfigurationLine
              }
              implementation {
                ...ImplementationBadge
              }
              environment {
                id
                provider
                label
                hardware {
                  ...HardwareBadge
                }
              }
            }
            """)
        variables: dict[str, object] = {"id": id, "reason": reason}
        response = self.execute(
            query=query, operation_name="CancelJob", variables=variables, **kwargs
        )
        data = self.get_data(response)
        return CancelJob.model_validate(data)

    def compare_runs(self, ids: list[str], **kwargs: Any) -> CompareRuns:
        query = gql("""
            query CompareRuns($ids: [ID!]!) {
              compareRuns(ids: $ids) {
                comparable
                incomparableBecause
                runs {
                  ...RunFigures
                }
                winner {
                  id
                  databaseId
                }
                differences {
                  field
                  label
                  values
                  differs
                }
              }
            }

            fragment ConfigurationLine on Configuration {
              dtype
              display
              bindings {
                axis
                value
              }
            }

            fragment HardwareBadge on Hardware {
              id
              sku
              shortName
              family
              vendor
            }

            fragment ImplementationBadge on Implementation {
              id
              slug
              title
              framework
              licence
              isBaseline
              availabilityLabel
              runtimeDisplay
            }

            fragment RunFigures on Run {
              id
              databaseId
              workloadSlug
              status
              evidence
              trustLevel
              trustLabel
              stale
              meanMs
              ciHalfWidthMs
              latencyDisplay
              plusMinusDisplay
              statisticDisplay
              observedAt
              observedDisplay
              reviewStatus
              caveats
              configuration {
                ...ConfigurationLine
              }
              implementation {
                ...ImplementationBadge
              }
              environment {
                id
                provider
                label
                hardware {
                  ...HardwareBadge
                }
              }
            }
            """)
        variables: dict[str, object] = {"ids": ids}
        response = self.execute(
            query=query, operation_name="CompareRuns", variables=variables, **kwargs
        )
        data = self.get_data(response)
        return CompareRuns.model_validate(data)

    def hardware_catalogue(
        self,
        first: int,
        after: Union[Optional[str], UnsetType] = UNSET,
        family: Union[Optional[str], UnsetType] = UNSET,
        priority: Union[Optional[bool], UnsetType] = UNSET,
        **kwargs: Any,
    ) -> HardwareCatalogue:
        query = gql("""
            query HardwareCatalogue($first: Int! = 50, $after: String, $family: String, $priority: Boolean) {
              hardware(first: $first, after: $after, family: $family, priority: $priority) {
                totalCount
                pageInfo {
                  ...PageCursor
                }
                nodes {
                  ...HardwareBadge
                  architecture
                  priority
                  hasDatasheet
                  memoryGb
                  dramBandwidthGbps
                  fp32Tflops
                  tf32Tflops
                  fp16Tflops
                  bf16Tflops
                  datasheetUrl
                }
              }
            }

            fragment HardwareBadge on Hardware {
              id
              sku
              shortName
              family
              vendor
            }

            fragment PageCursor on PageInfo {
              hasNextPage
              hasPreviousPage
              startCursor
              endCursor
            }
            """)
        variables: dict[str, object] = {
            "first": first,
            "after": after,
            "family": family,
            "priority": priority,
        }
        response = self.execute(
            query=query,
            operation_name="HardwareCatalogue",
            variables=variables,
            **kwargs,
        )
        data = self.get_data(response)
        return HardwareCatalogue.model_validate(data)

    def implementation_list(
        self,
        first: int,
        after: Union[Optional[str], UnsetType] = UNSET,
        licence: Union[Optional[str], UnsetType] = UNSET,
        **kwargs: Any,
    ) -> ImplementationList:
        query = gql("""
            query ImplementationList($first: Int! = 50, $after: String, $licence: String) {
              implementations(first: $first, after: $after, licence: $licence) {
                totalCount
                pageInfo {
                  ...PageCursor
                }
                nodes {
                  ...ImplementationBadge
                  sourceUrl
                  deployability {
                    deployable
                    words
                    reasons {
                      code
                      words
                    }
                  }
                }
              }
            }

            fragment ImplementationBadge on Implementation {
              id
              slug
              title
              framework
              licence
              isBaseline
              availabilityLabel
              runtimeDisplay
            }

            fragment PageCursor on PageInfo {
              hasNextPage
              hasPreviousPage
              startCursor
              endCursor
            }
            """)
        variables: dict[str, object] = {
            "first": first,
            "after": after,
            "licence": licence,
        }
        response = self.execute(
            query=query,
            operation_name="ImplementationList",
            variables=variables,
            **kwargs,
        )
        data = self.get_data(response)
        return ImplementationList.model_validate(data)

    def job_follow(self, id: str, **kwargs: Any) -> JobFollow:
        query = gql("""
            query JobFollow($id: ID!) {
              job(id: $id) {
                ...JobProgress
              }
            }

            fragment ConfigurationLine on Configuration {
              dtype
              display
              bindings {
                axis
                value
              }
            }

            fragment HardwareBadge on Hardware {
              id
              sku
              shortName
              family
              vendor
            }

            fragment ImplementationBadge on Implementation {
              id
              slug
              title
              framework
              licence
              isBaseline
              availabilityLabel
              runtimeDisplay
            }

            fragment JobProgress on Job {
              id
              databaseId
              state
              kind
              reason
              hardware
              replica
              attempts
              maxAttempts
              worker
              createdAt
              startedAt
              finishedAt
              durationS
              implementationSlug
              workload {
                id
                slug
                title
              }
              run {
                ...RunFigures
              }
              baselineRun {
                id
                meanMs
                latencyDisplay
              }
            }

            fragment RunFigures on Run {
              id
              databaseId
              workloadSlug
              status
              evidence
              trustLevel
              trustLabel
              stale
              meanMs
              ciHalfWidthMs
              latencyDisplay
              plusMinusDisplay
              statisticDisplay
              observedAt
              observedDisplay
              reviewStatus
              caveats
              configuration {
                ...ConfigurationLine
              }
              implementation {
                ...ImplementationBadge
              }
              environment {
                id
                provider
                label
                hardware {
                  ...HardwareBadge
                }
              }
            }
            """)
        variables: dict[str, object] = {"id": id}
        response = self.execute(
            query=query, operation_name="JobFollow", variables=variables, **kwargs
        )
        data = self.get_data(response)
        return JobFollow.model_validate(data)

    def job_list(
        self,
        first: int,
        filter_: Union[Optional[JobFilter], UnsetType] = UNSET,
        after: Union[Optional[str], UnsetType] = UNSET,
        **kwargs: Any,
    ) -> JobList:
        query = gql("""
            query JobList($filter: JobFilter, $first: Int! = 50, $after: String) {
              jobs(filter: $filter, first: $first, after: $after) {
                totalCount
                pageInfo {
                  ...PageCursor
                }
                edges {
                  cursor
                  node {
                    ...JobProgress
                  }
                }
              }
            }

            fragment ConfigurationLine on Configuration {
              dtype
              display
              bindings {
                axis
                value
              }
            }

            fragment HardwareBadge on Hardware {
              id
              sku
              shortName
              family
              vendor
            }

            fragment ImplementationBadge on Implementation {
              id
              slug
              title
              framework
              licence
              isBaseline
              availabilityLabel
              runtimeDisplay
            }

            fragment JobProgress on Job {
              id
              databaseId
              state
              kind
              reason
              hardware
              replica
              attempts
              maxAttempts
              worker
              createdAt
              startedAt
              finishedAt
              durationS
              implementationSlug
              workload {
                id
                slug
                title
              }
              run {
                ...RunFigures
              }
              baselineRun {
                id
                meanMs
                latencyDisplay
              }
            }

            fragment PageCursor on PageInfo {
              hasNextPage
              hasPreviousPage
              startCursor
              endCursor
            }

            fragment RunFigures on Run {
              id
              databaseId
              workloadSlug
              status
              evidence
              trustLevel
              trustLabel
              stale
              meanMs
              ciHalfWidthMs
              latencyDisplay
              plusMinusDisplay
              statisticDisplay
              observedAt
              observedDisplay
              reviewStatus
              caveats
              configuration {
                ...ConfigurationLine
              }
              implementation {
                ...ImplementationBadge
              }
              environment {
                id
                provider
                label
                hardware {
                  ...HardwareBadge
                }
              }
            }
            """)
        variables: dict[str, object] = {
            "filter": filter_,
            "first": first,
            "after": after,
        }
        response = self.execute(
            query=query, operation_name="JobList", variables=variables, **kwargs
        )
        data = self.get_data(response)
        return JobList.model_validate(data)

    def node_by_id(self, id: str, **kwargs: Any) -> NodeById:
        query = gql("""
            query NodeById($id: ID!) {
              node(id: $id) {
                __typename
                id
                ... on Workload {
                  slug
                  title
                }
                ... on Run {
                  ...RunFigures
                }
                ... on Implementation {
                  ...ImplementationBadge
                }
                ... on Hardware {
                  ...HardwareBadge
                }
                ... on Environment {
                  provider
                  torchVersion
                  cudaVersion
                  gpu: hardware {
                    ...HardwareBadge
                  }
                }
                ... on Job {
                  ...JobProgress
                }
              }
            }

            fragment ConfigurationLine on Configuration {
              dtype
              display
              bindings {
                axis
                value
              }
            }

            fragment HardwareBadge on Hardware {
              id
              sku
              shortName
              family
              vendor
            }

            fragment ImplementationBadge on Implementation {
              id
              slug
              title
              framework
              licence
              isBaseline
              availabilityLabel
              runtimeDisplay
            }

            fragment JobProgress on Job {
              id
              databaseId
              state
              kind
              reason
              hardware
              replica
              attempts
              maxAttempts
              worker
              createdAt
              startedAt
              finishedAt
              durationS
              implementationSlug
              workload {
                id
                slug
                title
              }
              run {
                ...RunFigures
              }
              baselineRun {
                id
                meanMs
                latencyDisplay
              }
            }

            fragment RunFigures on Run {
              id
              databaseId
              workloadSlug
              status
              evidence
              trustLevel
              trustLabel
              stale
              meanMs
              ciHalfWidthMs
              latencyDisplay
              plusMinusDisplay
              statisticDisplay
              observedAt
              observedDisplay
              reviewStatus
              caveats
              configuration {
                ...ConfigurationLine
              }
              implementation {
                ...ImplementationBadge
              }
              environment {
                id
                provider
                label
                hardware {
                  ...HardwareBadge
                }
              }
            }
            """)
        variables: dict[str, object] = {"id": id}
        response = self.execute(
            query=query, operation_name="NodeById", variables=variables, **kwargs
        )
        data = self.get_data(response)
        return NodeById.model_validate(data)

    def record_feed(
        self, first: int, after: Union[Optional[str], UnsetType] = UNSET, **kwargs: Any
    ) -> RecordFeed:
        query = gql("""
            query RecordFeed($first: Int! = 20, $after: String) {
              recordFeed(first: $first, after: $after) {
                totalCount
                pageInfo {
                  ...PageCursor
                }
                edges {
                  cursor
                  node {
                    ...RecordChange
                  }
                }
              }
            }

            fragment ConfigurationLine on Configuration {
              dtype
              display
              bindings {
                axis
                value
              }
            }

            fragment HardwareBadge on Hardware {
              id
              sku
              shortName
              family
              vendor
            }

            fragment ImplementationBadge on Implementation {
              id
              slug
              title
              framework
              licence
              isBaseline
              availabilityLabel
              runtimeDisplay
            }

            fragment PageCursor on PageInfo {
              hasNextPage
              hasPreviousPage
              startCursor
              endCursor
            }

            fragment RecordChange on RecordEvent {
              id
              kind
              workloadSlug
              improvementPercent
              createdAt
              words
              run {
                ...RunFigures
              }
              previousRun {
                id
                databaseId
                meanMs
                latencyDisplay
              }
            }

            fragment RunFigures on Run {
              id
              databaseId
              workloadSlug
              status
              evidence
              trustLevel
              trustLabel
              stale
              meanMs
              ciHalfWidthMs
              latencyDisplay
              plusMinusDisplay
              statisticDisplay
              observedAt
              observedDisplay
              reviewStatus
              caveats
              configuration {
                ...ConfigurationLine
              }
              implementation {
                ...ImplementationBadge
              }
              environment {
                id
                provider
                label
                hardware {
                  ...HardwareBadge
                }
              }
            }
            """)
        variables: dict[str, object] = {"first": first, "after": after}
        response = self.execute(
            query=query, operation_name="RecordFeed", variables=variables, **kwargs
        )
        data = self.get_data(response)
        return RecordFeed.model_validate(data)

    def workload_record_history(
        self,
        slug: str,
        first: int,
        after: Union[Optional[str], UnsetType] = UNSET,
        **kwargs: Any,
    ) -> WorkloadRecordHistory:
        query = gql("""
            query WorkloadRecordHistory($slug: String!, $first: Int! = 20, $after: String) {
              workload(slug: $slug) {
                id
                slug
                recordHistory(first: $first, after: $after) {
                  totalCount
                  pageInfo {
                    ...PageCursor
                  }
                  nodes {
                    ...RecordChange
                  }
                }
              }
            }

            fragment ConfigurationLine on Configuration {
              dtype
              display
              bindings {
                axis
                value
              }
            }

            fragment HardwareBadge on Hardware {
              id
              sku
              shortName
              family
              vendor
            }

            fragment ImplementationBadge on Implementation {
              id
              slug
              title
              framework
              licence
              isBaseline
              availabilityLabel
              runtimeDisplay
            }

            fragment PageCursor on PageInfo {
              hasNextPage
              hasPreviousPage
              startCursor
              endCursor
            }

            fragment RecordChange on RecordEvent {
              id
              kind
              workloadSlug
              improvementPercent
              createdAt
              words
              run {
                ...RunFigures
              }
              previousRun {
                id
                databaseId
                meanMs
                latencyDisplay
              }
            }

            fragment RunFigures on Run {
              id
              databaseId
              workloadSlug
              status
              evidence
              trustLevel
              trustLabel
              stale
              meanMs
              ciHalfWidthMs
              latencyDisplay
              plusMinusDisplay
              statisticDisplay
              observedAt
              observedDisplay
              reviewStatus
              caveats
              configuration {
                ...ConfigurationLine
              }
              implementation {
                ...ImplementationBadge
              }
              environment {
                id
                provider
                label
                hardware {
                  ...HardwareBadge
                }
              }
            }
            """)
        variables: dict[str, object] = {"slug": slug, "first": first, "after": after}
        response = self.execute(
            query=query,
            operation_name="WorkloadRecordHistory",
            variables=variables,
            **kwargs,
        )
        data = self.get_data(response)
        return WorkloadRecordHistory.model_validate(data)

    def hardware_records(
        self,
        hardware: str,
        first: int,
        after: Union[Optional[str], UnsetType] = UNSET,
        **kwargs: Any,
    ) -> HardwareRecords:
        query = gql("""
            query HardwareRecords($hardware: String!, $first: Int! = 20, $after: String) {
              records(hardware: $hardware, first: $first, after: $after) {
                totalCount
                pageInfo {
                  ...PageCursor
                }
                edges {
                  cursor
                  node {
                    id
                    workload {
                      id
                      slug
                      title
                    }
                    records(first: 10) {
                      ...RecordRow
                    }
                  }
                }
              }
            }

            fragment ImplementationBadge on Implementation {
              id
              slug
              title
              framework
              licence
              isBaseline
              availabilityLabel
              runtimeDisplay
            }

            fragment PageCursor on PageInfo {
              hasNextPage
              hasPreviousPage
              startCursor
              endCursor
            }

            fragment RecordRow on EnvironmentRecord {
              label
              latencyMs
              latencyDisplay
              runCount
              implementation {
                ...ImplementationBadge
              }
              run {
                id
                databaseId
              }
            }
            """)
        variables: dict[str, object] = {
            "hardware": hardware,
            "first": first,
            "after": after,
        }
        response = self.execute(
            query=query, operation_name="HardwareRecords", variables=variables, **kwargs
        )
        data = self.get_data(response)
        return HardwareRecords.model_validate(data)

    def run_table(
        self,
        first: Union[Optional[int], UnsetType] = UNSET,
        after: Union[Optional[str], UnsetType] = UNSET,
        workload: Union[Optional[str], UnsetType] = UNSET,
        implementation: Union[Optional[str], UnsetType] = UNSET,
        hardware: Union[Optional[str], UnsetType] = UNSET,
        level: Union[Optional[int], UnsetType] = UNSET,
        evidence: Union[Optional[Evidence], UnsetType] = UNSET,
        licence: Union[Optional[str], UnsetType] = UNSET,
        status: Union[Optional[RunStatus], UnsetType] = UNSET,
        stale: Union[Optional[bool], UnsetType] = UNSET,
        observed_since: Union[Optional[datetime], UnsetType] = UNSET,
        eligible_only: Union[Optional[bool], UnsetType] = UNSET,
        include_superseded: Union[Optional[bool], UnsetType] = UNSET,
        order_by: Union[Optional[RunOrder], UnsetType] = UNSET,
        **kwargs: Any,
    ) -> RunTable:
        query = gql("""
            query RunTable($first: Int = 100, $after: String, $workload: String, $implementation: String, $hardware: String, $level: Int, $evidence: Evidence, $licence: String, $status: RunStatus, $stale: Boolean, $observedSince: DateTime, $eligibleOnly: Boolean = false, $includeSuperseded: Boolean = false, $orderBy: RunOrder = NEWEST) {
              runs(
                first: $first
                after: $after
                workload: $workload
                implementation: $implementation
                hardware: $hardware
                level: $level
                evidence: $evidence
                licence: $licence
                status: $status
                stale: $stale
                observedSince: $observedSince
                eligibleOnly: $eligibleOnly
                includeSuperseded: $includeSuperseded
                orderBy: $orderBy
              ) {
                totalCount
                pageInfo {
                  ...PageCursor
                }
                nodes {
                  ...RunRow
                }
              }
            }

            fragment EnvironmentKey on Environment {
              id
              databaseId
              provider
              fingerprint
              hardware {
                id
                sku
                family
              }
            }

            fragment PageCursor on PageInfo {
              hasNextPage
              hasPreviousPage
              startCursor
              endCursor
            }

            fragment RunRow on Run {
              id
              databaseId
              workloadSlug
              suite
              level
              problemNumber
              workloadName
              configuration {
                dtype
                bindings {
                  axis
                  value
                }
              }
              implementation {
                id
                slug
                licence
              }
              environment {
                ...EnvironmentKey
              }
              protocol {
                id
                name
                version
                statistic
              }
              source {
                id
                name
                revision
              }
              status
              failureReason
              metric
              figure
              figureUnit
              meanMs
              stdMs
              minMs
              maxMs
              medianMs
              p5Ms
              p95Ms
              numTrials
              ciHalfWidthMs
              compileTimeMs
              observedAt
              evidence
              trustLevel
              trustLabel
              stale
              superseded
              retracted
            }
            """)
        variables: dict[str, object] = {
            "first": first,
            "after": after,
            "workload": workload,
            "implementation": implementation,
            "hardware": hardware,
            "level": level,
            "evidence": evidence,
            "licence": licence,
            "status": status,
            "stale": stale,
            "observedSince": observed_since,
            "eligibleOnly": eligible_only,
            "includeSuperseded": include_superseded,
            "orderBy": order_by,
        }
        response = self.execute(
            query=query, operation_name="RunTable", variables=variables, **kwargs
        )
        data = self.get_data(response)
        return RunTable.model_validate(data)

    def hardware_record_table(
        self,
        hardware: str,
        first: Union[Optional[int], UnsetType] = UNSET,
        after: Union[Optional[str], UnsetType] = UNSET,
        **kwargs: Any,
    ) -> HardwareRecordTable:
        query = gql("""
            query HardwareRecordTable($hardware: String!, $first: Int = 100, $after: String) {
              records(hardware: $hardware, first: $first, after: $after) {
                totalCount
                pageInfo {
                  ...PageCursor
                }
                nodes {
                  id
                  workload {
                    ...WorkloadKey
                  }
                  records(first: 100) {
                    ...RecordTableRow
                  }
                }
              }
            }

            fragment EnvironmentKey on Environment {
              id
              databaseId
              provider
              fingerprint
              hardware {
                id
                sku
                family
              }
            }

            fragment PageCursor on PageInfo {
              hasNextPage
              hasPreviousPage
              startCursor
              endCursor
            }

            fragment RecordTableRow on EnvironmentRecord {
              label
              metric
              figure
              figureUnit
              latencyMs
              runCount
              implementation {
                id
                slug
              }
              environment {
                ...EnvironmentKey
              }
              run {
                id
                databaseId
                numTrials
                ciHalfWidthMs
                evidence
                trustLevel
                observedAt
              }
            }

            fragment WorkloadKey on Workload {
              id
              slug
              suite
              level
              name
            }
            """)
        variables: dict[str, object] = {
            "hardware": hardware,
            "first": first,
            "after": after,
        }
        response = self.execute(
            query=query,
            operation_name="HardwareRecordTable",
            variables=variables,
            **kwargs,
        )
        data = self.get_data(response)
        return HardwareRecordTable.model_validate(data)

    def workload_record_table(self, slug: str, **kwargs: Any) -> WorkloadRecordTable:
        query = gql("""
            query WorkloadRecordTable($slug: String!) {
              workload(slug: $slug) {
                ...WorkloadKey
                records(first: 100) {
                  ...RecordTableRow
                }
              }
            }

            fragment EnvironmentKey on Environment {
              id
              databaseId
              provider
              fingerprint
              hardware {
                id
                sku
                family
              }
            }

            fragment RecordTableRow on EnvironmentRecord {
              label
              metric
              figure
              figureUnit
              latencyMs
              runCount
              implementation {
                id
                slug
              }
              environment {
                ...EnvironmentKey
              }
              run {
                id
                databaseId
                numTrials
                ciHalfWidthMs
                evidence
                trustLevel
                observedAt
              }
            }

            fragment WorkloadKey on Workload {
              id
              slug
              suite
              level
              name
            }
            """)
        variables: dict[str, object] = {"slug": slug}
        response = self.execute(
            query=query,
            operation_name="WorkloadRecordTable",
            variables=variables,
            **kwargs,
        )
        data = self.get_data(response)
        return WorkloadRecordTable.model_validate(data)

    def review_run(
        self,
        id: str,
        decision: ReviewDecision,
        note: Union[Optional[str], UnsetType] = UNSET,
        **kwargs: Any,
    ) -> ReviewRun:
        query = gql("""
            mutation ReviewRun($id: ID!, $decision: ReviewDecision!, $note: String) {
              reviewRun(id: $id, decision: $decision, note: $note) {
                ok
                reviewStatus
                error
              }
            }
            """)
        variables: dict[str, object] = {"id": id, "decision": decision, "note": note}
        response = self.execute(
            query=query, operation_name="ReviewRun", variables=variables, **kwargs
        )
        data = self.get_data(response)
        return ReviewRun.model_validate(data)

    def retract_run(self, id: str, reason: str, **kwargs: Any) -> RetractRun:
        query = gql("""
            mutation RetractRun($id: ID!, $reason: String!) {
              retractRun(id: $id, reason: $reason) {
                ok
                runId
                alreadyRetracted
                retractedAt
                reason
                error
              }
            }
            """)
        variables: dict[str, object] = {"id": id, "reason": reason}
        response = self.execute(
            query=query, operation_name="RetractRun", variables=variables, **kwargs
        )
        data = self.get_data(response)
        return RetractRun.model_validate(data)

    def submit_implementation(
        self, input: SubmitImplementationInput, **kwargs: Any
    ) -> SubmitImplementation:
        query = gql("""
            mutation SubmitImplementation($input: SubmitImplementationInput!) {
              submitImplementation(input: $input) {
                ok
                created
                problems {
                  key
                  reason
                }
                job {
                  ...JobProgress
                }
                jobs {
                  id
                  databaseId
                  replica
                  state
                }
              }
            }

            fragment ConfigurationLine on Configuration {
              dtype
              display
              bindings {
                axis
                value
              }
            }

            fragment HardwareBadge on Hardware {
              id
              sku
              shortName
              family
              vendor
            }

            fragment ImplementationBadge on Implementation {
              id
              slug
              title
              framework
              licence
              isBaseline
              availabilityLabel
              runtimeDisplay
            }

            fragment JobProgress on Job {
              id
              databaseId
              state
              kind
              reason
              hardware
              replica
              attempts
              maxAttempts
              worker
              createdAt
              startedAt
              finishedAt
              durationS
              implementationSlug
              workload {
                id
                slug
                title
              }
              run {
                ...RunFigures
              }
              baselineRun {
                id
                meanMs
                latencyDisplay
              }
            }

            fragment RunFigures on Run {
              id
              databaseId
              workloadSlug
              status
              evidence
              trustLevel
              trustLabel
              stale
              meanMs
              ciHalfWidthMs
              latencyDisplay
              plusMinusDisplay
              statisticDisplay
              observedAt
              observedDisplay
              reviewStatus
              caveats
              configuration {
                ...ConfigurationLine
              }
              implementation {
                ...ImplementationBadge
              }
              environment {
                id
                provider
                label
                hardware {
                  ...HardwareBadge
                }
              }
            }
            """)
        variables: dict[str, object] = {"input": input}
        response = self.execute(
            query=query,
            operation_name="SubmitImplementation",
            variables=variables,
            **kwargs,
        )
        data = self.get_data(response)
        return SubmitImplementation.model_validate(data)

    def workload_list(
        self,
        first: int,
        order_by: WorkloadOrder,
        after: Union[Optional[str], UnsetType] = UNSET,
        kind: Union[Optional[WorkloadKind], UnsetType] = UNSET,
        measured_on: Union[Optional[str], UnsetType] = UNSET,
        name_contains: Union[Optional[str], UnsetType] = UNSET,
        **kwargs: Any,
    ) -> WorkloadList:
        query = gql("""
            query WorkloadList($first: Int! = 20, $after: String, $kind: WorkloadKind, $measuredOn: String, $nameContains: String, $orderBy: WorkloadOrder! = SUITE_LEVEL_PROBLEM) {
              workloads(
                first: $first
                after: $after
                kind: $kind
                measuredOn: $measuredOn
                nameContains: $nameContains
                orderBy: $orderBy
              ) {
                totalCount
                pageInfo {
                  ...PageCursor
                }
                edges {
                  cursor
                  node {
                    id
                    slug
                    name
                    title
                    kind
                    level
                    eligibleRunCount
                    eligibleRunCountDisplay
                    lastObservedDisplay
                    headline {
                      label
                      latencyMs
                      latencyDisplay
                      speedupDisplay
                      implementation {
                        ...ImplementationBadge
                      }
                    }
                    records(first: 10) {
                      ...RecordRow
                    }
                  }
                }
              }
            }

            fragment ImplementationBadge on Implementation {
              id
              slug
              title
              framework
              licence
              isBaseline
              availabilityLabel
              runtimeDisplay
            }

            fragment PageCursor on PageInfo {
              hasNextPage
              hasPreviousPage
              startCursor
              endCursor
            }

            fragment RecordRow on EnvironmentRecord {
              label
              latencyMs
              latencyDisplay
              runCount
              implementation {
                ...ImplementationBadge
              }
              run {
                id
                databaseId
              }
            }
            """)
        variables: dict[str, object] = {
            "first": first,
            "after": after,
            "kind": kind,
            "measuredOn": measured_on,
            "nameContains": name_contains,
            "orderBy": order_by,
        }
        response = self.execute(
            query=query, operation_name="WorkloadList", variables=variables, **kwargs
        )
        data = self.get_data(response)
        return WorkloadList.model_validate(data)

    def workload_page(self, slug: str, **kwargs: Any) -> WorkloadPage:
        query = gql("""
            query WorkloadPage($slug: String!) {
              workload(slug: $slug) {
                id
                slug
                suite
                level
                problemNumber
                name
                kind
                title
                description
                eligibleRunCount
                eligibleRunCountDisplay
                lastObserved
                lastObservedDisplay
                canonicalConfiguration {
                  ...ConfigurationLine
                }
                headline {
                  kind
                  label
                  latencyMs
                  ciHalfWidthMs
                  latencyDisplay
                  plusMinusDisplay
                  statisticDisplay
                  speedupVsBaseline
                  speedupDisplay
                  evidenceLine
                  caveats
                  implementation {
                    ...ImplementationBadge
                  }
                  run {
                    ...RunFigures
                  }
                }
                records {
                  ...RecordRow
                }
                notMeasured {
                  message
                  hardware {
                    ...HardwareBadge
                  }
                }
                comparison {
                  ...ComparisonTable
                }
                headroom {
                  method
                  floorNs
                  floorDisplay
                  bound
                  recordMs
                  ratioAbove
                  ratioAboveDisplay
                  summary
                  boundLine
                  basisLine
                  notes
                  unavailableReason
                  hardware {
                    ...HardwareBadge
                  }
                }
                implementations {
                  ...ImplementationStanding
                }
                semantics {
                  determinism
                  constraints
                  inputs {
                    name
                    display
                  }
                  outputs {
                    name
                    display
                  }
                  axes {
                    name
                    behaviour
                    value
                  }
                }
                identity {
                  sha256
                  short
                  version
                }
                sources {
                  id
                  name
                  revision
                  revisionDate
                  licence
                  url
                  display
                }
                policy {
                  title
                  version
                  url
                }
              }
            }

            fragment ComparisonTable on Comparison {
              title
              header
              gpu
              protocolName
              statistic
              resultCount
              resultCountDisplay
              lastObserved
              configuration {
                ...ConfigurationLine
              }
              rows(first: 20) {
                rank
                rankDisplay
                isBaseline
                latencyMs
                intervalMs
                latencyDisplay
                plusMinusDisplay
                vsFirst
                vsFirstDisplay
                speedupVsBaseline
                verdict
                verdictWithInterval
                exactConfiguration
                notes
                summary
                trustLevel
                trustLabel
                crossCheck
                observedDisplay
                stale
                implementation {
                  ...ImplementationBadge
                }
                run {
                  ...RunFigures
                }
              }
            }

            fragment ConfigurationLine on Configuration {
              dtype
              display
              bindings {
                axis
                value
              }
            }

            fragment HardwareBadge on Hardware {
              id
              sku
              shortName
              family
              vendor
            }

            fragment ImplementationBadge on Implementation {
              id
              slug
              title
              framework
              licence
              isBaseline
              availabilityLabel
              runtimeDisplay
            }

            fragment ImplementationStanding on ImplementationSummary {
              bestLatencyMs
              bestLatencyDisplay
              vsBest
              vsBestDisplay
              trustLevel
              evidenceKinds
              availability
              runtimeDisplay
              implementation {
                ...ImplementationBadge
              }
              bestRun {
                id
                databaseId
              }
            }

            fragment RecordRow on EnvironmentRecord {
              label
              latencyMs
              latencyDisplay
              runCount
              implementation {
                ...ImplementationBadge
              }
              run {
                id
                databaseId
              }
            }

            fragment RunFigures on Run {
              id
              databaseId
              workloadSlug
              status
              evidence
              trustLevel
              trustLabel
              stale
              meanMs
              ciHalfWidthMs
              latencyDisplay
              plusMinusDisplay
              statisticDisplay
              observedAt
              observedDisplay
              reviewStatus
              caveats
              configuration {
                ...ConfigurationLine
              }
              implementation {
                ...ImplementationBadge
              }
              environment {
                id
                provider
                label
                hardware {
                  ...HardwareBadge
                }
              }
            }
            """)
        variables: dict[str, object] = {"slug": slug}
        response = self.execute(
            query=query, operation_name="WorkloadPage", variables=variables, **kwargs
        )
        data = self.get_data(response)
        return WorkloadPage.model_validate(data)

    def workload_runs(
        self,
        workload: str,
        first: int,
        order_by: RunOrder,
        after: Union[Optional[str], UnsetType] = UNSET,
        status: Union[Optional[RunStatus], UnsetType] = UNSET,
        evidence: Union[Optional[Evidence], UnsetType] = UNSET,
        hardware: Union[Optional[str], UnsetType] = UNSET,
        **kwargs: Any,
    ) -> WorkloadRuns:
        query = gql("""
            query WorkloadRuns($workload: String!, $first: Int! = 50, $after: String, $status: RunStatus, $evidence: Evidence, $hardware: String, $orderBy: RunOrder! = FASTEST) {
              runs(
                workload: $workload
                first: $first
                after: $after
                status: $status
                evidence: $evidence
                hardware: $hardware
                orderBy: $orderBy
              ) {
                totalCount
                pageInfo {
                  ...PageCursor
                }
                edges {
                  cursor
                  node {
                    ...RunFigures
                    failureReason
                    numTrials
                    flags {
                      code
                      words
                      reason
                    }
                    protocol {
                      id
                      name
                      version
                      statistic
                    }
                    source {
                      id
                      name
                      revision
                      display
                    }
                  }
                }
              }
            }

            fragment ConfigurationLine on Configuration {
              dtype
              display
              bindings {
                axis
                value
              }
            }

            fragment HardwareBadge on Hardware {
              id
              sku
              shortName
              family
              vendor
            }

            fragment ImplementationBadge on Implementation {
              id
              slug
              title
              framework
              licence
              isBaseline
              availabilityLabel
              runtimeDisplay
            }

            fragment PageCursor on PageInfo {
              hasNextPage
              hasPreviousPage
              startCursor
              endCursor
            }

            fragment RunFigures on Run {
              id
              databaseId
              workloadSlug
              status
              evidence
              trustLevel
              trustLabel
              stale
              meanMs
              ciHalfWidthMs
              latencyDisplay
              plusMinusDisplay
              statisticDisplay
              observedAt
              observedDisplay
              reviewStatus
              caveats
              configuration {
                ...ConfigurationLine
              }
              implementation {
                ...ImplementationBadge
              }
              environment {
                id
                provider
                label
                hardware {
                  ...HardwareBadge
                }
              }
            }
            """)
        variables: dict[str, object] = {
            "workload": workload,
            "first": first,
            "after": after,
            "status": status,
            "evidence": evidence,
            "hardware": hardware,
            "orderBy": order_by,
        }
        response = self.execute(
            query=query, operation_name="WorkloadRuns", variables=variables, **kwargs
        )
        data = self.get_data(response)
        return WorkloadRuns.model_validate(data)

    def workload_runs_backward(
        self,
        workload: str,
        last: int,
        order_by: RunOrder,
        before: Union[Optional[str], UnsetType] = UNSET,
        **kwargs: Any,
    ) -> WorkloadRunsBackward:
        query = gql("""
            query WorkloadRunsBackward($workload: String!, $last: Int! = 50, $before: String, $orderBy: RunOrder! = FASTEST) {
              runs(workload: $workload, last: $last, before: $before, orderBy: $orderBy) {
                totalCount
                pageInfo {
                  ...PageCursor
                }
                edges {
                  cursor
                  node {
                    ...RunFigures
                  }
                }
              }
            }

            fragment ConfigurationLine on Configuration {
              dtype
              display
              bindings {
                axis
                value
              }
            }

            fragment HardwareBadge on Hardware {
              id
              sku
              shortName
              family
              vendor
            }

            fragment ImplementationBadge on Implementation {
              id
              slug
              title
              framework
              licence
              isBaseline
              availabilityLabel
              runtimeDisplay
            }

            fragment PageCursor on PageInfo {
              hasNextPage
              hasPreviousPage
              startCursor
              endCursor
            }

            fragment RunFigures on Run {
              id
              databaseId
              workloadSlug
              status
              evidence
              trustLevel
              trustLabel
              stale
              meanMs
              ciHalfWidthMs
              latencyDisplay
              plusMinusDisplay
              statisticDisplay
              observedAt
              observedDisplay
              reviewStatus
              caveats
              configuration {
                ...ConfigurationLine
              }
              implementation {
                ...ImplementationBadge
              }
              environment {
                id
                provider
                label
                hardware {
                  ...HardwareBadge
                }
              }
            }
            """)
        variables: dict[str, object] = {
            "workload": workload,
            "last": last,
            "before": before,
            "orderBy": order_by,
        }
        response = self.execute(
            query=query,
            operation_name="WorkloadRunsBackward",
            variables=variables,
            **kwargs,
        )
        data = self.get_data(response)
        return WorkloadRunsBackward.model_validate(data)
