package workflows

import "go.temporal.io/sdk/converter"

func converterDefault() converter.DataConverter { return converter.GetDefaultDataConverter() }
